"""Reading a multipart upload with one `file` part: shared by documents, images and speech."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from starlette.datastructures import UploadFile
from starlette.requests import Request

from peakgate.api.bodies import MULTIPART, media_type_of, multipart_form, read_capped
from peakgate.api.endpoint import FilePart
from peakgate.errors import BadRequest


class MediaUpload(msgspec.Struct, kw_only=True):
    """The multipart fields an image or a clip upload shares (for the OpenAPI document; parsed by hand)."""

    file: FilePart
    target: str
    source: str | None = None
    tier: str | None = None  # synchronous answers only: a job translates at the default tier, as batch jobs do
    glossary_id: str | None = None
    # true: answer 202 with a job even for a small file (larger ones always are)
    async_: bool = msgspec.field(default=False, name="async")


@dataclass(frozen=True, slots=True)
class Upload:
    """A multipart upload: its text fields, and its `file` part's name, content type and bytes."""

    fields: dict[str, str]
    name: str | None
    content_type: str | None
    data: bytes


async def upload_form(request: Request, max_bytes: int, what: str) -> Upload:
    """The form, its body capped at `max_bytes`; 400 naming `what` ("document", "image") when it is not one."""
    if media_type_of(request) != MULTIPART:
        raise BadRequest(f"upload the {what} as multipart/form-data with a `file` part")
    body = await read_capped(request, max_bytes)
    async with multipart_form(request, body) as form:
        fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise BadRequest(f"missing the `file` part: send the {what} as a multipart file")
        return Upload(fields, upload.filename, upload.content_type, await upload.read())

import random

from peakgate.drills.soak_analysis import Sample, SoakThresholds, analyse, fit_line

MB = 1024 * 1024


def _series(n: int, step_s: float, mb_per_h: float, noise_mb: float = 0.0, seed: int = 1) -> list[Sample]:
    rng = random.Random(seed)
    return [Sample(i * step_s, (200 + mb_per_h * i * step_s / 3600 + rng.gauss(0, noise_mb)) * MB, 40)
            for i in range(n)]


def test_fit_line_exact() -> None:
    slope, intercept, r2, se = fit_line([0, 1, 2, 3], [1, 3, 5, 7])
    assert (round(slope, 9), round(intercept, 9), round(r2, 9), round(se, 9)) == (2, 1, 1, 0)


def test_flat_passes() -> None:
    out = analyse(_series(60, 5, 0.0))
    assert out["verdict"] == "PASS"


def test_leak_of_100_mb_per_hour_fails() -> None:
    out = analyse(_series(60, 5, 100.0, noise_mb=0.5))
    assert out["verdict"] == "FAIL"
    rss = out["rss_mb"]
    assert isinstance(rss, dict) and 90 < rss["slope_per_h"] < 110


def test_too_few_samples_inconclusive() -> None:
    assert analyse(_series(5, 5, 0.0))["verdict"] == "INCONCLUSIVE"
    assert analyse([])["verdict"] == "INCONCLUSIVE"


def test_five_minutes_of_noisy_flat_rss_is_inconclusive_not_pass() -> None:
    # 5 MB of noise over 5 minutes cannot bound an 8-hour projection under 64 MB.
    assert analyse(_series(60, 5, 0.0, noise_mb=5.0))["verdict"] == "INCONCLUSIVE"


def test_long_noisy_flat_run_passes() -> None:
    assert analyse(_series(2000, 5, 0.0, noise_mb=5.0))["verdict"] == "PASS"


def test_fd_leak_fails() -> None:
    samples = [Sample(i * 5.0, 200 * MB, 40 + i) for i in range(60)]
    out = analyse(samples)
    assert out["verdict"] == "FAIL"


def test_a_span_shorter_than_the_minimum_is_inconclusive_even_with_clear_growth() -> None:
    samples = _series(60, 5, 100.0, noise_mb=0.5)  # FAIL on its own (see above); 4 min after warm-up
    out = analyse(samples, SoakThresholds(min_span_s=600))
    assert out["verdict"] == "INCONCLUSIVE" and out["span_s"] == 235.0
    assert analyse(samples, SoakThresholds(min_span_s=200))["verdict"] == "FAIL"

"""Model build pipeline: corpus -> teacher distillation -> training -> CTranslate2 conversion."""

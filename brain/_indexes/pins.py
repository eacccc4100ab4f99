"""The sha256 of every file shipped in brain/_models, written by scripts/export-models."""

PINS: dict[str, dict[str, str]] = {
    "minilm": {
        "LICENSE": "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
        "model.onnx": "4e8dc10715b8a36cb9616428ee7a817e5a1617c72576fcade700d9865e0e8841",
        "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "weights-1.bin": "48321d8ff3dde563a21ec240e54a45601bd5cfc14c0f990ef322609e298d38ac",
        "weights-2.bin": "38a35e95f8a4896ad6b9d04ad5e19c35025775c44a5231710ed07b8552eea87f",
    },
    "splade-tiny": {
        "LICENSE": "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
        "model.onnx": "322de519b13f537b7376e44b76be535716c94b4401295e1f474433e2b08c19dd",
        "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
        "weights-1.bin": "0439d14a7fa2075e31154daae5488fb55a53797cbd891d078758ea3e2990ad55",
        "weights-2.bin": "1103dfc2e57a2d28f7167d93734c00d6028e38d73b112b9040222c0f1d336827",
    },
}

"""ONNX weights, their manifest and model cards, and the scripts that train them."""

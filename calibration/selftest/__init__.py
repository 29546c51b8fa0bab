"""The calibration's self-test: synthetic scenes with exact camera truth (`scenes`) and the whole calibration
measured against them (`evaluate`, `throwbox calibrate selftest`)."""

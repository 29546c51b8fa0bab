"""Frame in, Roll out, one folder or module per stage of the flow, in the order a frame meets them:

- `capture`: frame sources (camera, stream, video, images, demo) with loss and freeze detection;
- `settle`: one "at rest" frame per throw;
- `table/`: what belongs to the table, not the roll (calibration markers, table marks, where a die lies);
- `detect/`: one candidate per die (the ONNX CenterNet detector);
- `state/`: what each die is doing (the die-state model) and the probes that look again;
- `pips/`: the top face of each die (the face model and the classical pip count);
- `judge/`: does the roll count (count, stacked, cocked, size, validity, the layout check) -> verdict;
- `reader`: the one entry point that runs them all and returns a `Roll`.

Shared by the stages: `types` (the frozen dataclasses), `onnx_session` (the one onnxruntime wrapper), `image`
(decoding with its limits), `annotate` (the evidence frame), `colour`, `demo_scene`.
"""

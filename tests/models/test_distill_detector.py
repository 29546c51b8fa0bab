"""Distilling the detector into `LiteDieDetector` (models/distill_detector.py); needs the `train` extra."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training only: pip install -e '.[train]'")
pytest.importorskip("onnx")

from models.distill_detector import (  # noqa: E402
    TEACHER_CENTRE_HEAT,
    BlockRecorder,
    build_student,
    copy_shared_layers,
    feature_loss,
    load_student,
    output_distill_loss,
)
from models.nets import DieDetector, LiteDieDetector  # noqa: E402
from vision.onnx_session import DEFAULT_PROVIDERS, onnxruntime_session  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _shuffled(net: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Random weights and batch-norm statistics, so a copy is told apart from a fresh net."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                assert m.running_mean is not None and m.running_var is not None
                m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
    return net


def test_the_lite_detector_has_the_teachers_input_and_output() -> None:
    x = torch.rand(2, 3, 96, 128)
    with torch.no_grad():
        out = LiteDieDetector().eval()(x)
    assert out.shape == DieDetector().eval()(x).shape == (2, 5, 24, 32)
    assert float(out[:, 0].min()) >= 0 and float(out[:, 0].max()) <= 1  # the heat is a probability


def test_the_lite_detector_is_smaller() -> None:
    def params(net: torch.nn.Module) -> int:
        return sum(p.numel() for p in net.parameters())

    assert params(LiteDieDetector()) < 0.5 * params(DieDetector())


def test_the_shared_layers_are_copied_and_only_those() -> None:
    teacher = _shuffled(DieDetector(), seed=1)
    student = LiteDieDetector()
    before = {k: v.clone() for k, v in student.state_dict().items()}
    copy_shared_layers(student, teacher)
    t_state, s_state = teacher.state_dict(), student.state_dict()
    for key, value in s_state.items():
        layer = key.split(".")[0]
        if layer in LiteDieDetector.SHARED:
            assert torch.equal(value, t_state[key]), key
        else:
            assert layer in LiteDieDetector.REPLACED, key
            assert torch.equal(value, before[key]), key  # left as initialised
    assert set(LiteDieDetector.SHARED) | set(LiteDieDetector.REPLACED) == {
        name for name, _ in student.named_children()
    }


def test_a_student_continued_from_its_checkpoint_keeps_its_own_weights(tmp_path: Path) -> None:
    """--init-student: every layer from the checkpoint, none from the teacher (which differs everywhere)."""
    teacher = _shuffled(DieDetector(), seed=4)
    earlier = _shuffled(LiteDieDetector(), seed=5)
    path = tmp_path / "last.pt"
    torch.save(earlier.state_dict(), path)
    continued = load_student(path).state_dict()
    fresh = build_student(teacher).state_dict()
    for key, value in earlier.state_dict().items():
        assert torch.equal(continued[key], value), key
    assert torch.equal(fresh["stem.0.weight"], teacher.state_dict()["stem.0.weight"])
    assert not torch.equal(continued["stem.0.weight"], fresh["stem.0.weight"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no student checkpoint at"),  # a wrong path
        ("teacher", "(?s)is not a LiteDieDetector checkpoint: .*Missing key"),  # a teacher's checkpoint
        (b"not a checkpoint", "is not a LiteDieDetector checkpoint"),  # a file of something else
    ],
)
def test_a_bad_student_checkpoint_is_refused_with_its_reason(
    tmp_path: Path, content: str | bytes | None, message: str
) -> None:
    path = tmp_path / "last.pt"
    if content == "teacher":
        torch.save(DieDetector().state_dict(), path)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        load_student(path)


def test_a_bad_init_student_stops_the_script_before_any_data_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    import models.distill_detector as distill

    def no_data(_args: object) -> None:
        raise AssertionError("the data were loaded before the checkpoint was checked")

    monkeypatch.setattr(distill, "load_training_data", no_data)
    monkeypatch.setattr(sys, "argv", ["distill_detector", "--init-student", str(tmp_path / "missing.pt")])
    with pytest.raises(SystemExit) as exc:
        distill.main()
    assert exc.value.code == 2
    assert "no student checkpoint at" in capsys.readouterr().err


def test_a_teacher_of_another_shape_is_refused() -> None:
    with pytest.raises(RuntimeError, match="size mismatch"):
        copy_shared_layers(LiteDieDetector(), DieDetector(width=16))


def test_the_feature_loss_is_zero_for_the_teachers_own_blocks_and_not_otherwise() -> None:
    """Recorded on a teacher of the student's own shape: an exact copy scores 0, a fresh one does not."""
    teacher = _shuffled(LiteDieDetector(), seed=2).eval()
    recorder = BlockRecorder(teacher, LiteDieDetector.REPLACED)
    with torch.no_grad():
        teacher(torch.rand(2, 3, 64, 64))
    recorder.close()
    assert set(recorder.io) == set(LiteDieDetector.REPLACED)
    copy = LiteDieDetector().eval()
    copy.load_state_dict(teacher.state_dict())
    with torch.no_grad():
        assert float(feature_loss(copy, recorder.io)) < 1e-10
        assert float(feature_loss(LiteDieDetector().eval(), recorder.io)) > 0.1


def test_a_closed_recorder_records_nothing_more() -> None:
    teacher = DieDetector().eval()
    recorder = BlockRecorder(teacher, ("s4",))
    recorder.close()
    with torch.no_grad():
        teacher(torch.rand(1, 3, 32, 32))
    assert recorder.io == {}


def test_the_output_distillation_loss() -> None:
    teacher_out = torch.zeros(1, 5, 4, 4)
    teacher_out[0, 0, 1, 1] = 0.9  # one die centre
    teacher_out[0, 1:, 1, 1] = torch.tensor([2.0, 2.0, 0.5, 0.5])
    n_pos = torch.tensor(1.0)
    heat, reg = output_distill_loss(teacher_out.clone(), teacher_out, n_pos)
    assert float(heat) == 0.0 and float(reg) == 0.0
    student = teacher_out.clone()
    student[0, 0, 1, 1] = 0.4
    student[0, 1, 1, 1] = 3.0  # size off by 1 where the teacher sees a die
    student[0, 1, 3, 3] = 9.0  # size anywhere else is no target
    heat, reg = output_distill_loss(student, teacher_out, n_pos)
    assert float(heat) == pytest.approx(0.25)
    assert float(reg) == pytest.approx(0.9)  # weighted by the teacher's heat there
    faint = teacher_out.clone()
    faint[0, 0, 1, 1] = TEACHER_CENTRE_HEAT / 2  # below the bar: not a centre
    _, reg = output_distill_loss(student, faint, n_pos)
    assert float(reg) == 0.0


def test_the_student_exports_as_the_reader_runs_detectors(tmp_path: Path) -> None:
    from models.train_detector import export_detector

    net = _shuffled(LiteDieDetector(), seed=3).eval()
    path = tmp_path / "lite.onnx"
    export_detector(net, path, example_hw=(64, 64))
    image = torch.rand(1, 3, 96, 160)  # another size than the export's example: H and W are free
    with torch.no_grad():
        ours = net(image).numpy()
    theirs = np.asarray(
        onnxruntime_session(path, 1, DEFAULT_PROVIDERS).run(None, {"image": image.numpy()})[0]
    )
    assert theirs.shape == (1, 5, 24, 40)
    assert np.abs(ours - theirs).max() < 1e-4


def test_a_finished_student_is_saved_and_exported_unregistered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """finish_detector (both detector scripts): last.pt and the dated ONNX file; the manifest untouched."""
    import time

    from models.train_detector import finish_detector
    from vision.onnx_session import MANIFEST_PATH

    before = MANIFEST_PATH.read_bytes()
    net = _shuffled(LiteDieDetector(), seed=6)
    finish_detector(
        net, out=tmp_path, kind="centernet_lite", steps="1 + 2 steps x 4", started_s=time.monotonic(),
        no_register=True,
    )  # fmt: skip
    (onnx_path,) = tmp_path.glob("detect_centernet_lite_*.onnx")
    assert (tmp_path / "last.pt").is_file()
    assert "1 + 2 steps x 4 in" in capsys.readouterr().out
    assert MANIFEST_PATH.read_bytes() == before
    out = onnxruntime_session(onnx_path, 1, DEFAULT_PROVIDERS).run(
        None, {"image": np.zeros((1, 3, 64, 64), np.float32)}
    )
    assert np.asarray(out[0]).shape == (1, 5, 16, 16)

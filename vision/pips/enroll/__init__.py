"""Table enrollment's fit: adapt the shipped face model to one table's dice from a few labelled examples, no
torch (the service's job is `api/enrollment.py`).

`throwbox enroll --table ID --from DIR` reads `DIR/<face>/*.jpg` (one die per photo, the die filling it;
faces 1..6; or labelled frames, or confirmed rolls: `api.enrollment_sources`), cuts each as the reader cuts a
die whose box is the photo (`crop_die`), looks at it in the eight turns and mirror images a d6 face does not
change under, and runs the registered face model on them with
onnxruntime (`embedding`, its second output, and `probs`). Then, with numpy alone, it fits a correction of the
shipped head, z = log p_shipped + e @ dW.T + db, by full-batch gradient descent on the cross-entropy plus a
ridge penalty on dW (`ridge`): with few examples the correction stays small and the shipped head decides; the
examples move it only as far as they agree. Plain numpy, not scikit-learn (not a dependency) nor scipy: the
problem is a 6-class logistic regression of a few hundred rows, a few hundred steps of a known step size.

An enrollment must prove itself before it is stored (issue 47: on the shipped 18c, enrolling 60 dice of a
style it never saw made the rest read worse). `enroll_table` therefore also estimates, by stratified k-fold
cross-validation over the labelled dice (`FOLDS` folds, dealt face by face in an order drawn by a fixed
seed; each fit on the other folds' dice, all eight looks of each), how the shipped head and the enrolled
head read the dice held out of each fit (as cut, the reader's first look), with the dice each is sure of
(`ValidityConfig.min_confidence`, the reader's bar) and reads wrong. `Validation.helps` is the rule the
callers apply (`throwbox enroll`, the service's job): store only when the enrolled head reads more held-out
dice right and is sure-and-wrong on no more of them; otherwise refuse with both figures unless forced.
scikit-learn's StratifiedKFold would deal the folds the same way; it is not a dependency, and dealing a
shuffled, face-sorted list round-robin is four lines.

The correction is stored per table (`vision.pips.enrolled.save_enrollment`, beside the table's calibration)
with its SHA-256 and its validation, and the reader names it in every read (`models["pips"]`).

The fit is the reader's own (numpy and the face model through onnxruntime, no torch), so it lives with the
face reader; where the labelled dice come from, and storing the job, are the service's (`api/`).
Modules: `correction` (the crop, its looks, the face model's outputs, the fit), `validation` (the folds
and the rule an enrollment must pass), `table` (`enroll_table`: both, for one table).
"""

from vision.pips.enroll.correction import (
    RIDGE,
    STEPS,
    EnrollDataError,
    Progress,
    embed,
    fit_correction,
    photo_crop,
    symmetries,
)
from vision.pips.enroll.table import EMBED_SHARE, EnrollResult, enroll_table, forced
from vision.pips.enroll.validation import FOLD_SEED, FOLDS, Validation, cross_validate, fold_of

__all__ = [
    "EMBED_SHARE",
    "FOLDS",
    "FOLD_SEED",
    "RIDGE",
    "STEPS",
    "EnrollDataError",
    "EnrollResult",
    "Progress",
    "Validation",
    "cross_validate",
    "embed",
    "enroll_table",
    "fit_correction",
    "fold_of",
    "forced",
    "photo_crop",
    "symmetries",
]

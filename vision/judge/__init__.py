"""The judgement stage: does the roll count? Off-table and extra dice, dice on dice, cocked dice.

One module per idea (docs/architecture.md; the house style's rule 1):

- `config`: `JudgeConfig`, every threshold in one frozen object, with the data its defaults came from;
- `count`: fewer dice than the game needs (a die left the table, unless the detector saw something where
  a die may be), more (extra dice or foreign objects), and dice seen outside the throw box;
- `stacked`: a die resting on another die (675a.4(b));
- `cocked`: a die that does not lie flat: read by the face opposite the side resting on the chips when one
  side rests (675a.4(c)), void when more than one does, no decision when too close to call;
- `size`: a rethrow call on a detection far larger than the frame's dice (a chip stack?) goes to a person;
- `exposure`: is the frame fit to be read at all (washed out, too dark, too grainy);
- `decide`: the findings of all of the above, in order of precedence, into one verdict with reasons;
- `validity`: the judge's entry point: per-die certainty and all of the above for one read frame;
- `layout_check`: the Extra Roll's layout boxes (593.4(e), (g), (h)): the dealer's move checked.

What each die is doing comes from `vision.state` (the die-state model and its probes); where it lies on the
table from `vision.table.geometry`.

Its figures on labelled scenes are the lab's (`lab/judge_eval/`, `throwbox lab eval --verdicts`).
"""

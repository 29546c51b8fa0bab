"""The judgement stage: does the roll count? Off-table and extra dice, dice on dice, cocked dice.

One module per idea (design.md, style.md rule 1):

- `config`: `JudgeConfig`, every threshold in one frozen object, with the data its defaults came from;
- `state`: what each die is doing (flat, cocked, wedged, on a die, under a die, off the table), from the
  learned die-state classifier on a context crop around the die;
- `count`: fewer dice than the game needs (a die left the table, unless the detector saw something where
  a die may be), more (extra dice or foreign objects), and dice seen outside the throw box;
- `stacked`: a die resting on another die (675a.4(b));
- `cocked`: a die that does not lie flat: read by the face opposite the side resting on the chips when one
  side rests (675a.4(c)), void when more than one does, no decision when too close to call;
- `size`: a rethrow call on a detection far larger than the frame's dice (a chip stack?) goes to a person;
- `decide`: the findings of all of the above, in order of precedence, into one verdict with reasons.

Its figures on labelled scenes are the lab's (`lab/judge_eval/`, `throwbox lab eval --verdicts`).
"""

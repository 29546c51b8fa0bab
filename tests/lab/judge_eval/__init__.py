"""Tests of lab/judge_eval/: the judgement stage's figures on labelled scenes."""

"""The judgement stage measured on labelled synthetic scenes (`throwbox lab eval --verdicts`).

- `evaluate`: verdict figures on labelled synthetic scenes;
- `misses`: why labelled-valid rolls were not read valid, counted (`throwbox lab eval --verdicts --misses`).
"""

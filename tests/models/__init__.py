"""Tests of models/: data loading, evaluation, augmentation, the committed weights."""

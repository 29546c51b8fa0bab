"""Tests of vision/: the reader and its stages."""

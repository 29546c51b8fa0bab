"""Synthetic throw-box generator and loaders for real labelled dice photos."""

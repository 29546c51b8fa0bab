"""Die-state stage: what each die is doing (flat, cocked, wedged, on or under a die, off the table), from the
learned die-state model (`model`), and the second
looks that probe a die the model leaves in doubt (`probe`)."""

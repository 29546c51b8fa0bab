"""The physics-based synthetic throw-box generator (issue 3).

Modules, in the order a scene is made: `scenarios` (how the dice get where they are) -> `physics`
(pybullet, to rest) -> `truth` (face by the rules, flags, verdict) -> `randomise` (camera, look, light,
degradations) -> `render` (pybullet EGL / TinyRenderer) -> `generator` (one scene) -> `writer` (a data set,
in parallel). `dice` holds the die's geometry, `textures` its looks, `contact_sheet` draws the truth.
"""

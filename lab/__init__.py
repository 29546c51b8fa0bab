"""The lab: studies, evaluations, benchmarks and stress runs of the reader, and their plots and reports.

Nothing in the product imports it (docs/architecture.md: `api/` imports neither `lab/` nor the generator
nor training); the one link is the `throwbox lab ...` command group, registered by `api/cli` when this
package is there. The study scripts run as `python -m lab.NAME`; the lab's packages come with the `lab`
extra (`pip install 'throwbox[lab]'`, which brings `synth`'s pybullet and matplotlib), and `make install`
installs them with the test tools.
"""

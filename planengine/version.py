"""Version numbers that plans record and restore checks compare.

``ENGINE_VERSION`` is ``major.minor``; a plan written by this minor or the two before it is restorable
(DESIGN §3). ``PLAN_FORMAT_VERSION`` changes only when the JSON envelope itself changes shape: format 2 added
the ``queries`` section (the shared run-time topology, ``planengine.plan.topology``), written only by plans that
share a node between sinks; every other plan is still written as format 1, byte for byte as before.
"""

ENGINE_VERSION = "0.1"
PLAN_FORMAT_VERSION = 2  # the newest format this engine writes
# Formats this engine reads; a plan of any other format is incompatible (exit 4), never guessed at.
READABLE_PLAN_FORMATS = (1, 2)
# Minors back from ENGINE_VERSION whose plans this engine still restores.
SUPPORTED_MINOR_WINDOW = 2

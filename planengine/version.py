"""Version numbers that plans record and restore checks compare.

``ENGINE_VERSION`` is ``major.minor``; a plan written by this minor or the two before it is restorable
(DESIGN §3). ``PLAN_FORMAT_VERSION`` changes only when the JSON envelope itself changes shape.
"""

ENGINE_VERSION = "0.1"
PLAN_FORMAT_VERSION = 1
# Minors back from ENGINE_VERSION whose plans this engine still restores.
SUPPORTED_MINOR_WINDOW = 2

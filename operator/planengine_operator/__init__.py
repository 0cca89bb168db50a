"""The SparkPlanJob operator (kopf).

It talks to the engine only through the engine's CLI and its driver status API (DESIGN §6–7); it never
imports ``planengine``. Lives under ``operator/`` so no top-level ``operator`` package shadows the stdlib.
"""

__version__ = "0.1.0"

"""planengine: Flink-style streaming SQL compiled once into versioned plans that run on Apache Spark.

The pipeline reads like the product: parse (``planengine.sql``) → resolve against catalogs
(``planengine.catalog``) → logical plan and optimiser (``planengine.planner``) → exec-node DAG →
``CompiledPlan`` JSON (``planengine.plan``) → Spark translation (``planengine.runtime``).
"""

from planengine.version import ENGINE_VERSION, PLAN_FORMAT_VERSION

__all__ = ["ENGINE_VERSION", "PLAN_FORMAT_VERSION"]

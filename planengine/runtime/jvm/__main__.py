"""``python -m planengine.runtime.jvm [--force] [--quiet]``: build the JVM operator library for this PySpark."""

import sys

from planengine.runtime.jvm.build import main

sys.exit(main())

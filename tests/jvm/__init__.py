"""Unit tests of the JVM operator library (Java, ``tests/jvm/java``), run by ``python -m tests.jvm.run``."""

"""A pod runner for the API emulator (a test kubelet): runs the containers of the pods the operator creates
as local processes, exactly as the pods say, and a garbage collector beside it (``docs/operator.md``)."""

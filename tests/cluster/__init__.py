"""A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-controller-manager and kube-scheduler
built from their Go modules by ``tests/setup/prepare.d/40-controlplane.sh`` and started on loopback."""

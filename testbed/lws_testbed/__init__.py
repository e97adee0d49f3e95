"""The local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok) used by the tests, benchmarks and ``make run``."""

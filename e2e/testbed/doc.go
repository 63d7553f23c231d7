// Package testbed runs the end-to-end tests of udrain against a real control
// plane: it brings a cluster up before the tests of a package and always
// tears down the one it made, after the tests, on a panic or a test timeout
// (a reaper process), and on SIGINT/SIGTERM; it gives every test its own
// namespace and node pool, dumps control-plane logs, events and pod/node
// listings into e2e/_artifacts/<run>/<test>/ when a test fails, and can kill
// and restart the kube-apiserver for fault tests (and restart the
// kube-scheduler and kube-controller-manager when they stop after it, as a
// kubelet would). It reads the kube-apiserver's audit log
// ([Testbed.AuditLog]), which records the requests of ServiceAccounts, so
// that a test counts the requests of the code it runs under one without
// relying on that code.
//
// The cluster is, by E2E_* environment (see [OptionsFromEnv]):
//   - kwok (default): hack/cluster.sh up, a kwokctl cluster on the binary
//     runtime (etcd, kube-apiserver, kube-controller-manager, kube-scheduler
//     built from source; kwok plays the kubelets) on 127.0.0.1;
//   - an existing cluster (E2E_KUBECONFIG), which is never deleted;
//   - kind (E2E_PROVIDER=kind), only where Docker exists; never a fallback.
//
// Options.FeatureGates and Options.RuntimeConfig turn on Kubernetes features
// in the cluster the testbed makes (kwokctl --kube-feature-gates and
// --kube-runtime-config), e.g. the native PodGroup API for e2e/nativegroups.
//
// [Testbed.KubeRay] runs the KubeRay operator out of process against the
// cluster when a test asks for it (built and cached by hack/kuberay.sh, its
// CRDs installed first); it is stopped before the cluster is deleted, and
// the reaper kills it if the test process dies. [Testbed.LWS] runs the
// LeaderWorkerSet manager the same way (built and cached by hack/lws.sh from
// the module proxy or the source tarball in ../shared/third_party): its CRDs
// applied server-side, its webhooks served on 127.0.0.1 at a free port with
// a serving certificate of the testbed's own CA ([ServingCert]) and
// registered with url clientConfigs and caBundles ([LWSSetup]).
//
// A package's TestMain is one line, os.Exit(testbed.New(opts).Run(m)), and
// each test starts with bed.ForTest(t). It is test support: [Testbed.Run]
// owns the process (signals, exit); nothing else here prints or exits.
package testbed

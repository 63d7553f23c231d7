// Package evictiontest gives controllers that embed package eviction a
// fake API server to unit-test with: client-go's fake clientset
// (k8s.io/client-go/kubernetes/fake) with the reactors a drain needs, so
// that a Drainer's Drain, Rollout and dry runs run over it in
// milliseconds, with no reactor of the caller's.
//
// A bare fake clientset is not enough for a drain: it accepts an eviction
// and changes nothing (the drain then waits for a pod that never goes), it
// ignores dry runs (udrain's dry-run check before the cordon would remove
// the pods, and a server dry run would cordon the nodes), and its
// discovery serves no pods/eviction (udrain, as kubectl drain, would
// delete pods instead of evicting them). NewClientset's fake does what the
// API server does:
//
//   - Discovery serves pods/eviction in policy/v1, as kubectl drain's
//     CheckEvictionSupport asks.
//   - An eviction deletes the pod, at once (there is no kubelet): after
//     the API server's checks, in its order. A pod that does not exist is
//     404; a UID or resourceVersion precondition that does not match is
//     409; a pod that has terminated, is Pending or is being deleted is
//     deleted without asking its budget; a pod under two
//     PodDisruptionBudgets is 500; a budget whose status allows no
//     disruption is 429 with the DisruptionBudgetCause naming it (and
//     its observedGeneration behind its generation, 429 too; a negative
//     allowance, 403); a pod that is not Ready while its budget has its
//     healthy pods goes without spending the budget; else the budget's
//     status.disruptionsAllowed is spent (decremented, the pod in
//     disruptedPods) and the pod deleted. policy/v1beta1 evictions are
//     served too.
//   - A dry run (dryRun=All, on an eviction, a delete, a patch, an update
//     or a create) is checked as the real request is and changes nothing.
//   - A delete honours its UID and resourceVersion preconditions.
//
// What it does not do is run controllers: a budget's status stays what
// the test (or the evictions) made it, and an evicted pod does not come
// back. Options.OnEvicted is where a test plays them (see Install's
// example).
//
// It is a test kit: import it from _test.go files only.
package evictiontest

// Package kube builds the Kubernetes objects that the module's tests
// share: the pods of LeaderWorkerSet groups as the LeaderWorkerSet
// controller makes them and a kubelet runs them, the nodes they run on, and
// the disruption budget over their leaders. Each builder returns a new
// object; options change it, in order.
//
// Only tests import it. It imports package topology for the label keys,
// and through it the module's root package: the tests inside those two
// packages cannot use it (an import cycle); the others' can.
package kube

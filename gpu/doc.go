// Package gpu tells what a Kubernetes node's accelerators are and what is
// wrong with them, from the node object alone.
//
// ClassifyNode reads three independent tiers of evidence and compares them:
//
//   - hardware: labels written by something that looked at the PCI bus or
//     the instance type (Node Feature Discovery's pci-<vendor>.present, the
//     GPU operators' nvidia.com/gpu.present, GKE's
//     cloud.google.com/gke-accelerator, AKS's kubernetes.azure.com/accelerator,
//     Karpenter's and EKS Auto Mode's instance-gpu-*, the instance type);
//   - resource: the extended resource a device plugin registered
//     (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915, habana.ai/gaudi,
//     aws.amazon.com/neuron, google.com/tpu) in capacity and allocatable;
//   - descriptive: labels a labeller on the node wrote (NVIDIA GPU Feature
//     Discovery's nvidia.com/gpu.product, .count, .memory, .family; the AMD
//     node labeller's amd.com/gpu.* and beta.amd.com/gpu.*; Intel's
//     gpu.intel.com/*).
//
// From them it derives vendor, product (normalised as GFD writes it), device
// count and memory, sharing (time-slicing or MPS replicas, MIG strategy and
// profiles), whether taints dedicate the node, and a Status: Ready, Degraded,
// Pending (within a grace period after the node became Ready),
// ResourceMissing (GPU labels but nothing advertised: GPU pods stay Pending
// and unaware pods may share a card), NodeNotReady, Unlabeled (a resource
// without labels) or NotGPU. Findings say what is wrong and what to do.
//
// DiagnoseDaemonSet says whether a device plugin DaemonSet's pods can run on
// a node, as the DaemonSet controller decides it: the exact taint it does
// not tolerate (with the toleration and a kubectl patch that would fix it),
// the nodeSelector entry or node affinity requirement the node fails.
// Summarize does both for the nodes and DaemonSets as a lister or a List
// finds them (it picks the device plugins itself), groups the nodes into
// dedicated GPU, shared GPU and CPU pools with totals per product, and
// says which nodes need action (Summary.ProblemNodes). Every function
// here takes nodes and DaemonSets as listers give them: []*corev1.Node,
// []*appsv1.DaemonSet.
//
// For a drain and an upgrade of a set of nodes (package eviction's plans
// and rollouts use these): CapacityOf adds up the GPUs the nodes take out
// of service; Fits says whether the pods evicted from them fit back once
// they return, placed largest first and, as a spreading scheduler may
// place them, smallest first onto the node with the most GPUs free, which
// can fragment the free GPUs; Advertised, taken before the upgrade, and
// Losses, after it, name the GPU nodes that came back with fewer GPUs,
// each diagnosed against its vendor's device plugin DaemonSets. Each
// classifies the nodes with the Options it is given, as ClassifyNode does
// (eviction passes its Options.GPU).
//
// Everything here is a pure function over API objects: it lists nothing,
// changes nothing, prints nothing and never fails. The results carry JSON
// tags for "-o json" output. Not for: scheduling decisions (the scheduler
// and Dynamic Resource Allocation own those; Fits only estimates where
// pods may go), device health (ask the driver), or fetching objects (see
// examples/gpu-pool-audit for a client-go caller).
package gpu

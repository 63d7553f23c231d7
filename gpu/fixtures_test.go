package gpu

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// testNow is the fake "now" of every test; nodes default to Ready since two
// hours before it.
var testNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func testOptions() Options {
	return Options{Clock: clocktesting.NewFakePassiveClock(testNow)}
}

type nodeOption func(*corev1.Node)

// newNode builds a node with the given labels, Ready since two hours before
// testNow, then applies opts.
func newNode(name string, labels map[string]string, opts ...nodeOption) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("96"),
				corev1.ResourceMemory: resource.MustParse("1Ti"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("95"),
				corev1.ResourceMemory: resource.MustParse("1000Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
		},
	}
	readyFor(2 * time.Hour)(n)
	for _, o := range opts {
		o(n)
	}
	return n
}

func readyFor(d time.Duration) nodeOption {
	return func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(testNow.Add(-d)),
		}}
	}
}

func notReady() nodeOption {
	return func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionUnknown,
			LastTransitionTime: metav1.NewTime(testNow.Add(-time.Minute)),
		}}
	}
}

func withTaint(key, value string, effect corev1.TaintEffect) nodeOption {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

// withResource sets an extended resource's capacity and allocatable.
func withResource(name string, capacity, allocatable int64) nodeOption {
	return func(n *corev1.Node) {
		n.Status.Capacity[corev1.ResourceName(name)] = *resource.NewQuantity(capacity, resource.DecimalSI)
		n.Status.Allocatable[corev1.ResourceName(name)] = *resource.NewQuantity(allocatable, resource.DecimalSI)
	}
}

func cordoned() nodeOption {
	return func(n *corev1.Node) { n.Spec.Unschedulable = true }
}

// merge returns the union of label sets; later sets win.
func merge(sets ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, s := range sets {
		for k, v := range s {
			out[k] = v
		}
	}
	return out
}

// Label sets as real clusters carry them.
var (
	// nfdCPU is a sample of what Node Feature Discovery writes on any
	// x86 server: CPU features, kernel, an Intel chipset, and on EC2 the
	// Amazon ENA NIC and EBS NVMe controllers.
	nfdCPU = map[string]string{
		"feature.node.kubernetes.io/cpu-cpuid.AVX512F":         "true",
		"feature.node.kubernetes.io/cpu-cpuid.AMXTILE":         "true",
		"feature.node.kubernetes.io/cpu-model.vendor_id":       "Intel",
		"feature.node.kubernetes.io/kernel-version.major":      "6",
		"feature.node.kubernetes.io/pci-8086.present":          "true",
		"feature.node.kubernetes.io/pci-1d0f.present":          "true",
		"feature.node.kubernetes.io/pci-0200_1d0f.present":     "true",
		"feature.node.kubernetes.io/system-os_release.ID":      "ubuntu",
		"feature.node.kubernetes.io/storage-nonrotationaldisk": "true",
		"kubernetes.io/arch":                                   "amd64",
		"kubernetes.io/os":                                     "linux",
		"kubernetes.io/hostname":                               "x",
	}

	// gpuOperatorH100 is a DGX H100 managed by the NVIDIA GPU Operator:
	// its NFD configuration (vendor-only PCI labels), its gpu.present rule,
	// GFD's labels and the operator's deploy labels.
	gpuOperatorH100 = map[string]string{
		"feature.node.kubernetes.io/pci-10de.present":          "true",
		"feature.node.kubernetes.io/pci-15b3.present":          "true",
		"nvidia.com/gpu.present":                               "true",
		"nvidia.com/gpu.product":                               "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.count":                                 "8",
		"nvidia.com/gpu.memory":                                "81559",
		"nvidia.com/gpu.family":                                "hopper",
		"nvidia.com/gpu.machine":                               "DGXH100",
		"nvidia.com/gpu.compute.major":                         "9",
		"nvidia.com/gpu.compute.minor":                         "0",
		"nvidia.com/gpu.replicas":                              "1",
		"nvidia.com/gpu.sharing-strategy":                      "none",
		"nvidia.com/gpu.mode":                                  "compute",
		"nvidia.com/mig.capable":                               "true",
		"nvidia.com/mig.strategy":                              "single",
		"nvidia.com/mig.config":                                "all-disabled",
		"nvidia.com/mig.config.state":                          "success",
		"nvidia.com/cuda.driver.major":                         "550",
		"nvidia.com/cuda.driver-version.full":                  "550.90.07",
		"nvidia.com/cuda.runtime-version.major":                "12",
		"nvidia.com/gfd.timestamp":                             "1767225600",
		"nvidia.com/gpu.deploy.device-plugin":                  "true",
		"nvidia.com/gpu.deploy.driver":                         "true",
		"nvidia.com/gpu.deploy.gpu-feature-discovery":          "true",
		"nvidia.com/gpu.deploy.container-toolkit":              "true",
		"nvidia.com/gpu.deploy.dcgm-exporter":                  "true",
		"nvidia.com/gpu-driver-upgrade-state":                  "upgrade-done",
		"feature.node.kubernetes.io/cpu-cpuid.AVX512F":         "true",
		"feature.node.kubernetes.io/kernel-version.major":      "6",
		"node.kubernetes.io/instance-type":                     "p5.48xlarge",
		"topology.kubernetes.io/zone":                          "us-east-1a",
		"topology.udrain.dev/upgrade-domain":                   "ud-1",
		"feature.node.kubernetes.io/system-os_release.ID":      "ubuntu",
		"feature.node.kubernetes.io/pci-0302_10de.present":     "true",
		"feature.node.kubernetes.io/pci-0680_10de.present":     "true",
		"feature.node.kubernetes.io/pci-0200_15b3.present":     "true",
		"feature.node.kubernetes.io/storage-nonrotationaldisk": "true",
	}

	// gfdA100MixedMIG is an A100 node whose GPUs are all partitioned under
	// the MIG mixed strategy.
	gfdA100MixedMIG = map[string]string{
		"nvidia.com/gpu.present":             "true",
		"nvidia.com/gpu.product":             "NVIDIA-A100-SXM4-80GB",
		"nvidia.com/gpu.count":               "8",
		"nvidia.com/gpu.memory":              "81920",
		"nvidia.com/gpu.family":              "ampere",
		"nvidia.com/mig.capable":             "true",
		"nvidia.com/mig.strategy":            "mixed",
		"nvidia.com/mig.config":              "custom-mix",
		"nvidia.com/mig.config.state":        "success",
		"nvidia.com/mig-1g.10gb.count":       "14",
		"nvidia.com/mig-1g.10gb.memory":      "9728",
		"nvidia.com/mig-1g.10gb.slices.gi":   "1",
		"nvidia.com/mig-1g.10gb.product":     "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
		"nvidia.com/mig-1g.10gb.replicas":    "1",
		"nvidia.com/mig-3g.40gb.count":       "4",
		"nvidia.com/mig-3g.40gb.memory":      "40192",
		"nvidia.com/mig-3g.40gb.engines.ofa": "0",
	}

	// amdMI300X is an MI300X node of the AMD GPU Operator with both forms
	// of the node labeller's labels.
	amdMI300X = map[string]string{
		"feature.node.kubernetes.io/amd-gpu":          "true",
		"feature.node.kubernetes.io/pci-1002.present": "true",
		"amd.com/gpu.product-name":                    "AMD_Instinct_MI300X_OAM",
		"amd.com/gpu.vram":                            "192G",
		"amd.com/gpu.family":                          "AI",
		"amd.com/gpu.device-id":                       "74a1",
		"amd.com/gpu.cu-count":                        "304",
		"amd.com/gpu.simd-count":                      "1216",
		"amd.com/gpu.driver-version":                  "6.8.5",
		"beta.amd.com/gpu.family.AI":                  "8",
		"beta.amd.com/gpu.device-id.74a1":             "8",
		"beta.amd.com/gpu.vram.192G":                  "8",
		"beta.amd.com/gpu.cu-count.304":               "8",
	}

	// intelMax1550 is a node with four Intel Data Center GPU Max 1550,
	// labelled by NFD rules and the GPU plugin's NFD hook.
	intelMax1550 = map[string]string{
		"intel.feature.node.kubernetes.io/gpu":             "true",
		"gpu.intel.com/device-id.0380-0bd5.present":        "true",
		"gpu.intel.com/device-id.0380-0bd5.count":          "4",
		"gpu.intel.com/product":                            "Max_1550",
		"gpu.intel.com/memory.max":                         "549755813888",
		"gpu.intel.com/millicores":                         "4000",
		"gpu.intel.com/platform_pvc.present":               "true",
		"gpu.intel.com/platform_pvc.count":                 "4",
		"gpu.intel.com/platform_pvc.tiles":                 "2",
		"gpu.intel.com/platform_gen":                       "12",
		"gpu.intel.com/tiles":                              "8",
		"gpu.intel.com/cards":                              "card0.card1.card2.card3",
		"feature.node.kubernetes.io/pci-0380_8086.present": "true",
	}

	gkeL4 = map[string]string{
		"cloud.google.com/gke-accelerator":        "nvidia-l4",
		"cloud.google.com/gke-gpu-driver-version": "latest",
		"cloud.google.com/gke-nodepool":           "l4-pool",
		"cloud.google.com/machine-family":         "g2",
		"node.kubernetes.io/instance-type":        "g2-standard-8",
		"cloud.google.com/gke-boot-disk":          "pd-balanced",
		"topology.kubernetes.io/zone":             "us-central1-a",
	}

	gkeTPU = map[string]string{
		"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
		"cloud.google.com/gke-tpu-topology":    "2x2",
		"cloud.google.com/gke-nodepool":        "tpu-pool",
		"node.kubernetes.io/instance-type":     "ct5lp-hightpu-4t",
	}

	// eksG5 is a node of an EKS managed node group on the accelerated AMI:
	// EKS writes no GPU label, only the instance type tells.
	eksG5 = map[string]string{
		"eks.amazonaws.com/nodegroup":       "gpu-g5",
		"eks.amazonaws.com/capacityType":    "ON_DEMAND",
		"eks.amazonaws.com/nodegroup-image": "ami-0123456789abcdef0",
		"node.kubernetes.io/instance-type":  "g5.12xlarge",
		"topology.kubernetes.io/region":     "eu-west-1",
	}

	aksA100 = map[string]string{
		"kubernetes.azure.com/accelerator": "nvidia",
		"kubernetes.azure.com/agentpool":   "gpunp",
		"kubernetes.azure.com/mode":        "user",
		"agentpool":                        "gpunp",
		"node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4",
	}

	karpenterP4d = map[string]string{
		"karpenter.sh/nodepool":                       "gpu",
		"karpenter.sh/capacity-type":                  "on-demand",
		"karpenter.k8s.aws/instance-family":           "p4d",
		"karpenter.k8s.aws/instance-gpu-count":        "8",
		"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
		"karpenter.k8s.aws/instance-gpu-name":         "a100",
		"karpenter.k8s.aws/instance-gpu-memory":       "40960",
		"node.kubernetes.io/instance-type":            "p4d.24xlarge",
	}

	karpenterInf2 = map[string]string{
		"karpenter.sh/nodepool":                               "neuron",
		"karpenter.k8s.aws/instance-accelerator-count":        "1",
		"karpenter.k8s.aws/instance-accelerator-manufacturer": "aws",
		"karpenter.k8s.aws/instance-accelerator-name":         "inferentia",
		"node.kubernetes.io/instance-type":                    "inf2.xlarge",
	}
)

// devicePluginDS is the NVIDIA device plugin as its Helm chart installs it,
// with the tolerations given.
func devicePluginDS(tolerations ...corev1.Toleration) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvdp-nvidia-device-plugin"},
		Spec: appsv1.DaemonSetSpec{
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					Tolerations: tolerations,
					Containers: []corev1.Container{{
						Name:  "nvidia-device-plugin-ctr",
						Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
					}},
				},
			},
		},
	}
}

package gpu

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestParseCount(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"8", 8, false},
		{"0", 0, false},
		{"+4", 4, false},
		{"1048576", 1 << 20, false},
		{"1048577", 0, true},
		{"-1", 0, true},
		{"", 0, true},
		{"eight", 0, true},
		{"8.0", 0, true},
		{"0x8", 0, true},
		{" 8", 0, true},
		{"99999999999999999999999", 0, true},
	}
	for _, tt := range tests {
		got, err := parseCount(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("parseCount(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseMemoryMiB(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"81559", 81559, false}, // GFD: MiB
		{"192G", 196608, false}, // AMD labeller
		{"16G", 16384, false},
		{"80GB", 81920, false},
		{"80GiB", 81920, false},
		{"80gi", 81920, false},
		{"4096M", 4096, false},
		{"4096MiB", 4096, false},
		{"1.5T", 1572864, false},
		{"1T", 1 << 20, false},
		{"0.5G", 512, false},
		{"2048K", 2, false},
		{"1023KiB", 0, false},
		{".5G", 512, false},
		{"0", 0, false},
		{"1024T", 1 << 30, false},
		{"1025T", 0, true},
		{"1073741825", 0, true},
		{"9999999999999G", 0, true},
		{"", 0, true},
		{"G", 0, true},
		{".", 0, true},
		{"80 GB", 0, true},
		{"80XB", 0, true},
		{"-80G", 0, true},
		{"1.2.3G", 0, true},
		{"1e3G", 0, true},
		{"NaN", 0, true},
	}
	for _, tt := range tests {
		got, err := parseMemoryMiB(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("parseMemoryMiB(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseBytesAsMiB(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"549755813888", 524288, false},
		{"17179869184", 16384, false},
		{"1048575", 0, false},
		{"18446744073709551615", 0, true}, // 16 EiB: out of range
		{"-1", 0, true},
		{"16G", 0, true},
	}
	for _, tt := range tests {
		got, err := parseBytesAsMiB(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("parseBytesAsMiB(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseProduct(t *testing.T) {
	tests := []struct {
		in      string
		want    product
		wantErr bool
	}{
		{"NVIDIA-H100-80GB-HBM3", product{Name: "NVIDIA-H100-80GB-HBM3"}, false},
		{"NVIDIA-A10G-SHARED", product{Name: "NVIDIA-A10G", Shared: true}, false},
		{"Tesla-T4-SHARED", product{Name: "Tesla-T4", Shared: true}, false},
		{"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", product{Name: "NVIDIA-A100-SXM4-40GB", MIGProfile: "1g.5gb"}, false},
		{"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", product{Name: "NVIDIA-A100-SXM4-40GB", Shared: true, MIGProfile: "1g.5gb"}, false},
		{"NVIDIA-H100-80GB-HBM3-MIG-1c.3g.40gb", product{Name: "NVIDIA-H100-80GB-HBM3", MIGProfile: "1c.3g.40gb"}, false},
		{"NVIDIA-H100-80GB-HBM3-MIG-1g.10gb+me", product{Name: "NVIDIA-H100-80GB-HBM3", MIGProfile: "1g.10gb+me"}, false},
		{"AMD_Instinct_MI300X_OAM", product{Name: "AMD-Instinct-MI300X-OAM"}, false},
		{"NVIDIA H100 80GB HBM3", product{Name: "NVIDIA-H100-80GB-HBM3"}, false},
		{"Max_1550", product{Name: "Max-1550"}, false},
		{"nvidia-tesla-t4", product{Name: "nvidia-tesla-t4"}, false},
		{"", product{}, true},
		{"-SHARED", product{Name: "SHARED"}, false},
		{"NVIDIA-A100-MIG-", product{}, true},
		{"NVIDIA-A100-MIG-big", product{}, true},
		{"NVIDIA-A100-MIG-1g.5gb+", product{}, true},
		{"NVIDIA-A100-SHARED-SHARED", product{}, true},
		{"NVIDIA-A100-SHARED-MIG-1g.5gb", product{}, true},
		{"NVIDIA-A100-MIG-1g.5gb-MIG-2g.10gb", product{}, true},
		{"NVIDIA/A100", product{}, true},
		{strings.Repeat("A", 254), product{}, true},
	}
	for _, tt := range tests {
		got, err := parseProduct(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseProduct(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(product{})); diff != "" {
			t.Errorf("parseProduct(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestValidMIGProfile(t *testing.T) {
	for _, ok := range []string{"1g.5gb", "7g.80gb", "1g.10gb+me", "1c.2g.20gb", "1g.24gb+me"} {
		if err := validMIGProfile(ok); err != nil {
			t.Errorf("validMIGProfile(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "1g", "gb", "1g.gb", "g.5gb", "1x.5gb", "1g.5GB", "1g.5gb+", "1g.5gb+ME", "1g..5gb"} {
		if err := validMIGProfile(bad); err == nil {
			t.Errorf("validMIGProfile(%q) = nil, want an error", bad)
		}
	}
}

// The fuzz tests hold the parsers to their contract on any input: never
// panic, never return an out-of-range value, and an error (which becomes a
// MalformedLabel finding) instead of a guess.

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"8", "0", "-1", "eight", "+4", "1048577", "", "0x10", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseCount(s)
		if err != nil {
			if n != 0 {
				t.Errorf("parseCount(%q) = %d with error %v, want 0", s, n, err)
			}
			return
		}
		if n < 0 || n > maxCount {
			t.Errorf("parseCount(%q) = %d, out of range", s, n)
		}
	})
}

func FuzzParseMemoryMiB(f *testing.F) {
	for _, s := range []string{"81559", "192G", "80GiB", "1.5T", ".5G", "2048K", "NaN", "1e9", "9999999999999T", "1..2G", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseMemoryMiB(s)
		if err != nil {
			if n != 0 {
				t.Errorf("parseMemoryMiB(%q) = %d with error %v, want 0", s, n, err)
			}
			return
		}
		if n < 0 || n > maxMemoryMiB {
			t.Errorf("parseMemoryMiB(%q) = %d, out of range", s, n)
		}
		// Adding a unit never makes a value smaller, and G is 1024 M.
		if !strings.ContainsAny(s, "kKmMgGtTiIbB") {
			if g, err := parseMemoryMiB(s + "G"); err == nil && g < n {
				t.Errorf("parseMemoryMiB(%q) = %d < parseMemoryMiB(%q) = %d", s+"G", g, s, n)
			}
		}
	})
}

func FuzzParseProduct(f *testing.F) {
	for _, s := range []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-A10G-SHARED", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED",
		"AMD_Instinct_MI300X_OAM", "NVIDIA-A100-MIG-", "-MIG-1g.5gb", "x-shared", "\x00", "NVIDIA  H100"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseProduct(s)
		if err != nil {
			if p != (product{}) {
				t.Errorf("parseProduct(%q) = %+v with error %v, want zero", s, p, err)
			}
			return
		}
		if p.Name == "" {
			t.Errorf("parseProduct(%q) accepted an empty product", s)
		}
		if _, shared := cutSuffixFold(p.Name, "-SHARED"); shared || strings.Contains(p.Name, "-MIG-") {
			t.Errorf("parseProduct(%q).Name = %q keeps a suffix", s, p.Name)
		}
		if p.MIGProfile != "" && validMIGProfile(p.MIGProfile) != nil {
			t.Errorf("parseProduct(%q).MIGProfile = %q is not a valid profile", s, p.MIGProfile)
		}
		// Normalised names are fixed points.
		again, err := parseProduct(p.Name)
		if err != nil || again != (product{Name: p.Name}) {
			t.Errorf("parseProduct(%q) = %+v, %v; want the name back unchanged", p.Name, again, err)
		}
	})
}

// FuzzClassifyNode feeds arbitrary values to every label key the classifier
// reads, and arbitrary keys under its prefixes: ClassifyNode must not panic
// and must report what it cannot read.
func FuzzClassifyNode(f *testing.F) {
	f.Add("nvidia.com/gpu.count", "8", "nvidia.com/mig-1g.10gb.count", "7", int64(8))
	f.Add("nvidia.com/gpu.product", "NVIDIA-A100-MIG-x", "beta.amd.com/gpu.vram.192G", "8", int64(0))
	f.Add("gpu.intel.com/memory.max", "-1", "feature.node.kubernetes.io/pci-0300_8086.present", "true", int64(-3))
	f.Add("karpenter.k8s.aws/instance-gpu-count", "1e9", "cloud.google.com/gke-max-shared-clients-per-gpu", "0", int64(1))
	f.Add("nvidia.com/mig-gb.count", "x", "beta.amd.com/gpu.device-id.", "9", int64(3))
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, amount int64) {
		labels := merge(gpuOperatorH100, map[string]string{k1: v1, k2: v2})
		n := newNode("fuzz", labels, withResource("nvidia.com/gpu", amount, amount/2))
		c := ClassifyNode(n, testOptions())
		if c.Count < 0 || c.MemoryMiB < 0 || c.LabelCount < 0 {
			t.Errorf("negative amounts: %+v", verdictOf(c))
		}
		if c.Status == "" {
			t.Error("empty status")
		}
		for _, f := range c.Findings {
			if f.Code == "" || f.Message == "" {
				t.Errorf("finding without code or message: %+v", f)
			}
		}
		_ = ClassifyNode(newNode("fuzz", map[string]string{k1: v1, k2: v2}, withResource(corev1.ResourceName(k1).String(), amount, amount)), testOptions())
	})
}

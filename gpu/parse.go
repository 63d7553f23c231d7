package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds beyond which a label value is implausible rather than large: they
// keep every later multiplication (count × replicas, MiB × GPUs) far from
// int64 overflow.
const (
	maxCount     = 1 << 20 // devices or replicas on one node
	maxMemoryMiB = 1 << 30 // 1 PiB per device
)

// parseCount reads a device or replica count label value: a non-negative
// decimal integer.
func parseCount(value string) (int64, error) {
	if value == "" {
		return 0, fmt.Errorf("empty; want a non-negative integer such as 8")
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer; want a non-negative integer such as 8", value)
	}
	if n < 0 || n > maxCount {
		return 0, fmt.Errorf("%d is out of range; want 0 to %d", n, maxCount)
	}
	return n, nil
}

// parseMemoryMiB reads a device memory label value into MiB. A bare number is
// MiB, as NVIDIA GPU Feature Discovery writes nvidia.com/gpu.memory
// ("81559"). A number with a unit is how the AMD node labeller writes
// amd.com/gpu.vram ("192G"); K, M, G and T, with or without "i" and "B" and
// in any case, are all read as powers of 1024, since device memory is
// binary. A decimal fraction is allowed ("1.5T"); the result is rounded down.
func parseMemoryMiB(value string) (int64, error) {
	const want = "want MiB (81559) or a size with a unit (192G, 80GiB)"
	if value == "" {
		return 0, fmt.Errorf("empty; %s", want)
	}
	i := 0
	dot := -1
	for i < len(value) && (value[i] >= '0' && value[i] <= '9' || value[i] == '.' && dot < 0) {
		if value[i] == '.' {
			dot = i
		}
		i++
	}
	number, unit := value[:i], strings.ToLower(value[i:])
	if number == "" || number == "." {
		return 0, fmt.Errorf("%q has no number; %s", value, want)
	}
	var shift int // 2^shift MiB per unit; negative for KiB
	switch unit {
	case "", "m", "mb", "mi", "mib":
		shift = 0
	case "k", "kb", "ki", "kib":
		shift = -10
	case "g", "gb", "gi", "gib":
		shift = 10
	case "t", "tb", "ti", "tib":
		shift = 20
	default:
		return 0, fmt.Errorf("%q has unknown unit %q; %s", value, value[i:], want)
	}
	whole, frac, _ := strings.Cut(number, ".")
	if len(strings.TrimLeft(whole, "0")) > 12 { // 10^12 of anything is out of range; also bounds ParseInt
		return 0, fmt.Errorf("%q is out of range; %s", value, want)
	}
	w := int64(0)
	if whole != "" {
		w, _ = strconv.ParseInt(whole, 10, 64) // digits only, at most 12 significant: cannot fail
	}
	// Keep 6 fractional digits: enough for any unit's rounding to MiB.
	if len(frac) > 6 {
		frac = frac[:6]
	}
	f := int64(0)
	scale := int64(1)
	for _, c := range frac {
		f = f*10 + int64(c-'0')
		scale *= 10
	}
	var mib int64
	switch {
	case shift >= 0:
		if w > maxMemoryMiB>>shift {
			return 0, fmt.Errorf("%q is out of range; %s", value, want)
		}
		mib = w<<shift + (f<<shift)/scale
	default:
		mib = (w*scale + f) >> -shift / scale
	}
	if mib > maxMemoryMiB {
		return 0, fmt.Errorf("%q is out of range; %s", value, want)
	}
	return mib, nil
}

// parseBytesAsMiB reads a byte count (Intel's gpu.intel.com/memory.max) into
// MiB, rounded down.
func parseBytesAsMiB(value string) (int64, error) {
	n, err := strconv.ParseUint(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a byte count; want a non-negative integer such as 17179869184", value)
	}
	mib := n >> 20
	if mib > maxMemoryMiB {
		return 0, fmt.Errorf("%q is out of range; want at most %d MiB", value, int64(maxMemoryMiB))
	}
	return int64(mib), nil
}

// product is a product label value taken apart.
type product struct {
	// Name is the product without sharing or MIG suffixes, with spaces and
	// underscores turned into hyphens: "NVIDIA-H100-80GB-HBM3".
	Name string
	// Shared is true when the value ended in "-SHARED", which GPU Feature
	// Discovery appends while time-slicing or MPS replicates the devices.
	Shared bool
	// MIGProfile is the profile of a "-MIG-<profile>" suffix, which GFD
	// writes under the single MIG strategy: "1g.10gb".
	MIGProfile string
}

// parseProduct normalises a product label value the way NVIDIA GPU Feature
// Discovery writes nvidia.com/gpu.product: words joined by hyphens, with the
// "-SHARED" and "-MIG-<profile>" suffixes split off into facts of their own.
// Values of other vendors ("AMD_Instinct_MI300X_OAM") and of cloud labels
// are normalised the same way.
func parseProduct(value string) (product, error) {
	const want = "want a product name such as NVIDIA-H100-80GB-HBM3"
	if len(value) > 253 {
		return product{}, fmt.Errorf("%d characters is too long; %s", len(value), want)
	}
	var p product
	name := normaliseWords(value)
	if n, ok := cutSuffixFold(name, "-SHARED"); ok {
		name, p.Shared = n, true
	}
	if strings.HasSuffix(name, "-MIG") {
		return product{}, fmt.Errorf("%q has a -MIG suffix without a profile; %s", value, want)
	}
	if i := strings.LastIndex(name, "-MIG-"); i >= 0 {
		profile := name[i+len("-MIG-"):]
		if err := validMIGProfile(profile); err != nil {
			return product{}, fmt.Errorf("%q has a malformed MIG suffix: %v", value, err)
		}
		name, p.MIGProfile = name[:i], profile
	}
	if name == "" {
		return product{}, fmt.Errorf("%q names no product; %s", value, want)
	}
	if _, again := cutSuffixFold(name, "-SHARED"); again || strings.Contains(name, "-MIG-") || strings.HasSuffix(name, "-MIG") {
		return product{}, fmt.Errorf("%q repeats or misorders its -MIG-<profile> and -SHARED suffixes; %s", value, want)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '+') {
			return product{}, fmt.Errorf("%q contains %q; %s", value, c, want)
		}
	}
	p.Name = name
	return p, nil
}

// normaliseWords joins the words of value with single hyphens: spaces,
// tabs, underscores and hyphens all separate words.
func normaliseWords(value string) string {
	return strings.Join(strings.FieldsFunc(value, func(c rune) bool {
		return c == ' ' || c == '\t' || c == '_' || c == '-'
	}), "-")
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

// validMIGProfile checks a MIG profile name as NVIDIA writes it in labels and
// resource names: slice counts ("1c.", "2g.") followed by a memory size in
// GB and optional "+" attributes: "1g.10gb", "1c.2g.20gb", "1g.10gb+me".
func validMIGProfile(profile string) error {
	const want = "want a profile such as 1g.10gb"
	base, attrs, _ := strings.Cut(profile, "+")
	parts := strings.Split(base, ".")
	if len(parts) < 2 {
		return fmt.Errorf("profile %q: %s", profile, want)
	}
	for i, part := range parts {
		unit := "g"
		if i == len(parts)-1 {
			unit = "gb"
		} else if strings.HasSuffix(part, "c") {
			unit = "c"
		}
		digits, ok := strings.CutSuffix(part, unit)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			return fmt.Errorf("profile %q: %s", profile, want)
		}
	}
	if strings.Contains(profile, "+") && (attrs == "" || strings.Trim(attrs, "abcdefghijklmnopqrstuvwxyz+") != "") {
		return fmt.Errorf("profile %q: %s", profile, want)
	}
	return nil
}

// Package resourceversion compares the resourceVersions of Kubernetes
// objects where the API server's storage makes them comparable: etcd's
// revisions, decimal and growing. Kubernetes calls them opaque, so a
// comparison says something only when both are decimal; udrain uses it to
// notice a cluster's history going back (etcd restored from a snapshot).
package resourceversion

import "strconv"

// Older reports whether a is an older resourceVersion than b: true only
// when both are decimal numbers and a's is smaller.
func Older(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}

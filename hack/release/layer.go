package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"time"
)

// The image's user: distroless's "nonroot", so that runAsNonRoot holds
// without a numeric runAsUser in every manifest.
const (
	imageUID  = 65532
	imageUser = "65532:65532"
	// binaryPath is the entrypoint; PATH names its folder so that a
	// manifest's command: ["udrain"] finds it.
	binaryPath = "/usr/local/bin/udrain"
)

// rootFS is the layer of one platform: the udrain binary, and the user
// and group files that name the non-root user. No shell, no package
// manager, no libc: the binary is static.
func rootFS(binary string, mtime time.Time) ([]byte, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// Every entry has the same owner and time, whatever the build machine:
	// the layer is a function of the binary and the commit time.
	entry := func(name string, mode int64, typ byte, uid int, data []byte) error {
		h := &tar.Header{Name: name, Mode: mode, Typeflag: typ, Uid: uid, Gid: uid, ModTime: mtime, Format: tar.FormatPAX, Size: int64(len(data))}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	dir := func(name string, mode int64, uid int) error { return entry(name, mode, tar.TypeDir, uid, nil) }
	file := func(name string, mode int64, data []byte) error { return entry(name, mode, tar.TypeReg, 0, data) }
	steps := []error{
		dir("etc/", 0o755, 0),
		file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
		file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")),
		dir("home/", 0o755, 0),
		dir("home/nonroot/", 0o700, imageUID),
		dir("tmp/", 0o1777, 0),
		dir("usr/", 0o755, 0),
		dir("usr/local/", 0o755, 0),
		dir("usr/local/bin/", 0o755, 0),
		file("usr/local/bin/udrain", 0o755, bin),
	}
	for _, err := range steps {
		if err != nil {
			return nil, fmt.Errorf("write the layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return gzipBytes(buf.Bytes())
}

// gzipBytes compresses b without a name or time in the gzip header, so
// that the same bytes compress the same (with the same Go release).
func gzipBytes(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(zw, bytes.NewReader(b)); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

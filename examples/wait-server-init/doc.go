// Command wait-server-init shows the two ways a GPUStack-style worker can
// wait for its server instead of failing to register while the server
// starts ("Name or service not known", then "Connection refused", then 503):
//
//   - worker.yaml: a StatefulSet whose init container runs
//     "udrain wait-server http://gpustack-server.gpustack.svc:80/healthz
//     --timeout 10m", for worker images you cannot change;
//   - this program: a worker that embeds bootstrap.WaitForServer before it
//     registers (POST /v1/workers), the way a worker binary would.
//
// Run it against a server:
//
//	go run ./examples/wait-server-init --server-url http://gpustack-server.gpustack.svc:80 --name gpu-node-07 --token-file /var/run/secrets/gpustack/token
//
// It exits 0 once registered, 3 if the server did not become reachable in
// --timeout (the error says the last failure class and what to check), 1 on
// other errors. It is an example, not a GPUStack client.
//
// worker.yaml passes Pod Security "restricted" (e2e/manifests checks every
// example): GPUStack's image runs as root unless told otherwise, so the
// worker runs as uid 1000 with USER and HOME set and its data directory on
// a volume. Its images are pinned to releases (GPUStack v0.7.1): move
// them to the ones you run.
package main

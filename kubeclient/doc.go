// Package kubeclient configures a client-go client so that no request
// waits forever on a sick API server.
//
// client-go's rest.Config bounds nothing by default: a server that accepts
// connections and never answers (a dead load balancer, a firewall that
// drops) holds a request, and the program that made it, forever. Its one
// bound, rest.Config.Timeout, also cuts every watch after that time, which
// breaks the informers of a long drain. [BoundRequests] bounds each
// request instead: one that is not a watch must be answered in full within
// the timeout (an answer that stalls half way fails too); a watch must
// start within it, and then streams for as long as the server keeps it
// open. A request that runs out of time fails with a
// [*RequestTimeoutError], a net.Error whose Timeout is true.
//
// [Config] applies that bound with udrain's rate limits (client-go's
// defaults of 5 requests per second, bursts of 10, would make a drain wait
// on the client rather than on the cluster) and a user agent, to a copy of
// the caller's configuration:
//
//	base, err := clientcmd.BuildConfigFromFlags("", kubeconfig) // or rest.InClusterConfig()
//	...
//	cfg, err := kubeclient.Config(base, kubeclient.Options{UserAgent: kubeclient.UserAgent("my-upgrader", "v1.2.3")})
//	...
//	client, err := kubernetes.NewForConfig(cfg)
//
// A kubectl plugin builds it from kubectl's connection flags with
// [ConfigFromFlags], which refuses a --context, --cluster or --user that
// the kubeconfig does not have ([CheckSelection]) before any request.
//
// A controller, or a Go upgrade script, that embeds udrain gets the same
// client the udrain command uses. The package never logs, prints or exits,
// and keeps no global state.
package kubeclient

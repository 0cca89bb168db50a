// Command etcd is etcd's own server entry point (as etcd's server/main.go): the server module has
// replace directives of its own, so it cannot be built with `go install` from the module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

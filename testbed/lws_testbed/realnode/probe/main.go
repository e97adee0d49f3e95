// lws-probe: the e2e tests' workload on real nodes, one static program for leaders and workers.
//
// The leader (LWS_WORKER_INDEX 0) listens on --port; every worker resolves
// $LWS_LEADER_ADDRESS through the cluster's DNS, connects, and reports its LWS_* variables
// once; the leader keeps what it was told. Every pod serves HTTP on --http:
//
//	GET  /healthz   200
//	GET  /ready     200 once ready: a worker once the leader has its report; the leader at once,
//	                or with --hold-ready only after POST /ready
//	POST /ready     become ready
//	GET  /reports   (leader) the workers' reports, as a JSON list
//	POST /exit      exit with ?code= (a process that fails by itself)
//
// On SIGTERM it waits --term-delay before exiting 0 (a container that takes time to stop).
// With --no-rendezvous every pod is ready at once (for timing what the controller does).
// With --resolve-leader it only resolves $LWS_LEADER_ADDRESS once and exits: 0 if the name
// resolved, 1 if not (an init container that needs its leader's address).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type report struct {
	Pod           string   `json:"pod"`
	WorkerIndex   string   `json:"worker_index"`
	GroupSize     string   `json:"group_size"`
	GroupIndex    string   `json:"group_index"`
	LeaderAddress string   `json:"leader_address"`
	Resolved      []string `json:"resolved"`
}

var (
	mu      sync.Mutex
	reports []report
	ready   atomic.Bool
)

func logf(format string, args ...any) {
	fmt.Printf(time.Now().UTC().Format(time.RFC3339Nano)+" "+format+"\n", args...)
}

func serveLeader(port int) {
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		logf("listen: %v", err)
		os.Exit(2)
	}
	logf("leader listening on :%d", port)
	for {
		conn, err := ln.Accept()
		if err != nil {
			continue
		}
		go func(c net.Conn) {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			var r report
			if err := json.NewDecoder(bufio.NewReader(c)).Decode(&r); err != nil {
				logf("bad report from %s: %v", c.RemoteAddr(), err)
				return
			}
			mu.Lock()
			reports = append(reports, r)
			mu.Unlock()
			line, _ := json.Marshal(r)
			logf("report %s", line)
			_, _ = c.Write([]byte("ok\n"))
		}(conn)
	}
}

// reportToLeader resolves the leader's address (retrying: its DNS record appears once the
// leader pod has an IP) and sends this pod's report until the leader acknowledges it.
func reportToLeader(port int) {
	r := report{
		Pod:           os.Getenv("HOSTNAME"),
		WorkerIndex:   os.Getenv("LWS_WORKER_INDEX"),
		GroupSize:     os.Getenv("LWS_GROUP_SIZE"),
		GroupIndex:    os.Getenv("LWS_GROUP_INDEX"),
		LeaderAddress: os.Getenv("LWS_LEADER_ADDRESS"),
	}
	delay := 100 * time.Millisecond
	for {
		addrs, err := net.LookupHost(r.LeaderAddress)
		if err == nil && len(addrs) > 0 {
			r.Resolved = addrs
			if err = send(addrs[0], port, r); err == nil {
				logf("reported to the leader at %s (%v)", r.LeaderAddress, addrs)
				ready.Store(true)
				return
			}
		}
		logf("leader %s not reachable yet: %v", r.LeaderAddress, err)
		time.Sleep(delay)
		delay = min(2*delay, 2*time.Second)
	}
}

func send(ip string, port int, r report) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewEncoder(c).Encode(r); err != nil {
		return err
	}
	ack, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if ack != "ok\n" {
		return fmt.Errorf("unexpected answer %q", ack)
	}
	return nil
}

func main() {
	port := flag.Int("port", 7000, "the leader's rendezvous port")
	httpPort := flag.Int("http", 8080, "HTTP port (health, readiness, reports, exit)")
	holdReady := flag.Bool("hold-ready", false, "the leader is not ready until POST /ready")
	termDelay := flag.Duration("term-delay", 0, "how long to take to stop on SIGTERM")
	alone := flag.Bool("no-rendezvous", false, "ready at once, no leader/worker exchange (timings)")
	resolveLeader := flag.Bool("resolve-leader", false, "resolve $LWS_LEADER_ADDRESS once and exit")
	flag.Parse()

	if *resolveLeader {
		name := os.Getenv("LWS_LEADER_ADDRESS")
		addrs, err := net.LookupHost(name)
		if err != nil || len(addrs) == 0 {
			logf("leader %s not resolved: %v", name, err)
			os.Exit(1)
		}
		logf("leader %s resolved: %v", name, addrs)
		os.Exit(0)
	}

	leader := os.Getenv("LWS_WORKER_INDEX") == "0"
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) })
	http.HandleFunc("/ready", func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			ready.Store(true)
			logf("ready on request")
		}
		if ready.Load() {
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(503)
	})
	http.HandleFunc("/reports", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(append([]report{}, reports...))
	})
	http.HandleFunc("/exit", func(w http.ResponseWriter, req *http.Request) {
		code, err := strconv.Atoi(req.URL.Query().Get("code"))
		if err != nil || req.Method != http.MethodPost {
			w.WriteHeader(400)
			return
		}
		w.WriteHeader(202)
		logf("exiting with code %d on request", code)
		go func() { time.Sleep(50 * time.Millisecond); os.Exit(code) }()
	})
	go func() {
		if err := http.ListenAndServe(fmt.Sprintf(":%d", *httpPort), nil); err != nil {
			logf("http: %v", err)
			os.Exit(2)
		}
	}()

	switch {
	case *alone:
		ready.Store(true)
	case leader:
		ready.Store(!*holdReady)
		go serveLeader(*port)
	default:
		go reportToLeader(*port)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	logf("got %v; stopping in %v", s, *termDelay)
	time.Sleep(*termDelay)
	logf("stopped")
}

package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
)

// startProfiles starts the CPU profile of --cpuprofile and the execution trace of
// --trace, and returns what ends them and writes the heap profile of --memprofile:
// the profiles docs/performance.md's figures come from, taken of a real daemon rather
// than a test binary.
func startProfiles(f runFlags) (stop func() error, err error) {
	var cpu, tr *os.File
	if f.trace != "" {
		if tr, err = os.Create(f.trace); err != nil {
			return nil, fmt.Errorf("--trace: %w", err)
		}
		if err := trace.Start(tr); err != nil {
			tr.Close()
			return nil, fmt.Errorf("--trace: %w", err)
		}
	}
	if f.cpuProfile != "" {
		if cpu, err = os.Create(f.cpuProfile); err == nil {
			if err = pprof.StartCPUProfile(cpu); err != nil {
				cpu.Close()
			}
		}
		if err != nil {
			if tr != nil {
				trace.Stop()
				tr.Close()
			}
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	return func() error {
		if tr != nil {
			trace.Stop()
			if err := tr.Close(); err != nil {
				return fmt.Errorf("--trace: %w", err)
			}
		}
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
		}
		if f.memProfile == "" {
			return nil
		}
		mem, err := os.Create(f.memProfile)
		if err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		runtime.GC() // the heap as it is, not as of the last collection
		if err := pprof.WriteHeapProfile(mem); err != nil {
			mem.Close()
			return fmt.Errorf("--memprofile: %w", err)
		}
		return mem.Close()
	}, nil
}

// logResources logs what the daemon itself used over its life, its agents excluded:
// CPU time and the peak resident set size (what an operator sizes a machine by); and,
// apart, the CPU time of the processes it started and waited for (its agents, hooks
// and probes), with what they waited for in turn.
func logResources(log *slog.Logger) {
	var ru, children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return
	}
	cpu := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	childCPU := 0.0
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) == nil {
		childCPU = cpu(children.Utime) + cpu(children.Stime)
	}
	log.Info("resources used", "cpu_user_s", cpu(ru.Utime), "cpu_system_s", cpu(ru.Stime),
		"max_rss_kb", maxRSSKiB(ru.Maxrss), "children_cpu_s", childCPU)
}

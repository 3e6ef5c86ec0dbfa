package main

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// What a round costs in CPU, beside its transactions: the machine's busy
// time over the measured part (every process: Postgres, the instances, the
// demo server and this load generator), the instances' own, and this
// process's own (its users and the demo server). Read from /proc; on a
// system without it nothing is printed.

// clockTick is Linux's USER_HZ, the unit of /proc's CPU times: 100 on every
// architecture Go builds for.
const clockTick = 10 * time.Millisecond

// machineBusy returns the CPU time all cores have spent working since
// boot, or -1: user, nice, system and interrupt time, not idling, not
// waiting for I/O, and not steal (time a virtual machine's host gave to
// others).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return -1
	}
	var busy int64
	// user nice system idle iowait irq softirq steal
	for i, v := range f[1:9] {
		if i == 3 || i == 4 || i == 7 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return -1
		}
		busy += n
	}
	return time.Duration(busy) * clockTick
}

// processCPU returns the user and system time a process has used, or -1.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command's name, in parentheses, may hold spaces: count after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	// state is the first field after the name (field 3); utime and stime
	// are fields 14 and 15.
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(u+st) * clockTick
}

// usage is what the counters read at one moment.
type usage struct {
	xacts   int64         // the run's database's transactions; -1 unknown
	machine time.Duration // busy CPU of the whole machine; -1 unknown
	app     time.Duration // CPU of the instances; -1 unknown
	gen     time.Duration // CPU of this process: the users and the demo server; -1 unknown
}

// usageReader reads the counters; xacts may be nil (not counted).
func (f *fleet) usageReader(xacts *xactCounter) func() usage {
	return func() usage {
		u := usage{xacts: -1, machine: machineBusy(), gen: processCPU(os.Getpid())}
		if xacts != nil {
			u.xacts = xacts.read()
		}
		u.app = 0
		for _, p := range f.procs {
			c := processCPU(p.Process.Pid)
			if c < 0 {
				u.app = -1
				break
			}
			u.app += c
		}
		return u
	}
}

// spent is what was used between two readings, per answered round: -1
// where either reading is unknown.
func spent(before, after usage, rounds int) (xacts float64, machine, app, gen time.Duration) {
	xacts, machine, app, gen = -1, -1, -1, -1
	if rounds == 0 {
		return
	}
	per := func(b, a time.Duration) time.Duration {
		if b < 0 || a < 0 {
			return -1
		}
		return (a - b) / time.Duration(rounds)
	}
	if before.xacts >= 0 && after.xacts >= 0 {
		xacts = float64(after.xacts-before.xacts) / float64(rounds)
	}
	return xacts, per(before.machine, after.machine), per(before.app, after.app), per(before.gen, after.gen)
}

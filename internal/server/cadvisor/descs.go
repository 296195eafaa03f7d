package cadvisor

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

var labels = []string{"container", "id", "image", "name", "namespace", "pod"}

func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, labels...), extra...), nil)
}

var (
	machineCores  = prometheus.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", []string{"boot_id", "machine_id", "system_uuid"}, nil)
	machineMemory = prometheus.NewDesc("machine_memory_bytes", "Amount of memory installed on the machine.", []string{"boot_id", "machine_id", "system_uuid"}, nil)

	cpuUsage            = desc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.")
	cpuUser             = desc("container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.")
	cpuSystem           = desc("container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.")
	cfsPeriods          = desc("container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.")
	cfsThrottledPeriods = desc("container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.")
	cfsThrottledSeconds = desc("container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.")
	memUsage            = desc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed")
	memMaxUsage         = desc("container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes")
	memWorkingSet       = desc("container_memory_working_set_bytes", "Current working set in bytes.")
	memRSS              = desc("container_memory_rss", "Size of RSS in bytes.")
	memCache            = desc("container_memory_cache", "Number of bytes of page cache memory.")
	memMappedFile       = desc("container_memory_mapped_file", "Size of memory mapped files in bytes.")
	memFailcnt          = desc("container_memory_failcnt", "Number of memory usage hits limits")
	memFailures         = desc("container_memory_failures_total", "Cumulative count of memory allocation failures.", "failure_type", "scope")
	memSwap             = desc("container_memory_swap", "Container swap usage in bytes.")
	oomEvents           = desc("container_oom_events_total", "Count of out of memory events observed for the container")
	specCPUShares       = desc("container_spec_cpu_shares", "CPU share of the container.")
	specCPUQuota        = desc("container_spec_cpu_quota", "CPU quota of the container.")
	specCPUPeriod       = desc("container_spec_cpu_period", "CPU period of the container.")
	specMemoryLimit     = desc("container_spec_memory_limit_bytes", "Memory limit for the container.")
	specMemoryReserve   = desc("container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.")
	specMemorySwapLimit = desc("container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.")
	fsReads             = desc("container_fs_reads_bytes_total", "Cumulative count of bytes read", "device")
	fsWrites            = desc("container_fs_writes_bytes_total", "Cumulative count of bytes written", "device")
	fsReadOps           = desc("container_fs_reads_total", "Cumulative count of reads completed", "device")
	fsWriteOps          = desc("container_fs_writes_total", "Cumulative count of writes completed", "device")
	blkioUsage          = desc("container_blkio_device_usage_total", "Blkio Device bytes usage", "device", "major", "minor", "operation")
	fsUsage             = desc("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", "device")
	fsLimit             = desc("container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", "device")
	fsInodesFree        = desc("container_fs_inodes_free", "Number of available Inodes", "device")
	fsInodesTotal       = desc("container_fs_inodes_total", "Number of Inodes", "device")
	processes           = desc("container_processes", "Number of processes running inside the container.")
	threads             = desc("container_threads", "Number of threads running inside the container")
	threadsMax          = desc("container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero")
	fileDescriptors     = desc("container_file_descriptors", "Number of open file descriptors for the container.")
	socketsDesc         = desc("container_sockets", "Number of open sockets for the container.")
	ulimitsSoft         = desc("container_ulimits_soft", "Soft ulimit values for the container root process. Unlimited if -1, except priority and nice", "ulimit")
	startTime           = desc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.")
	lastSeen            = desc("container_last_seen", "Last time a container was seen by the exporter")

	netRxBytes   = desc("container_network_receive_bytes_total", "Cumulative count of bytes received", "interface")
	netRxPackets = desc("container_network_receive_packets_total", "Cumulative count of packets received", "interface")
	netRxErrors  = desc("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", "interface")
	netRxDropped = desc("container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", "interface")
	netTxBytes   = desc("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", "interface")
	netTxPackets = desc("container_network_transmit_packets_total", "Cumulative count of packets transmitted", "interface")
	netTxErrors  = desc("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", "interface")
	netTxDropped = desc("container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", "interface")
)

// emitNetwork reports the pod's interfaces (but lo) from its network namespace.
func emitNetwork(ch chan<- prometheus.Metric, proc string, t target) {
	f, err := os.Open(filepath.Join(proc, strconv.Itoa(t.netPID), "net", "dev"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		name = strings.TrimSpace(name)
		fields := strings.Fields(rest)
		if !ok || name == "lo" || len(fields) < 12 {
			continue
		}
		lv := append(append([]string{}, t.labels...), name)
		for i, d := range map[int]*prometheus.Desc{0: netRxBytes, 1: netRxPackets, 2: netRxErrors, 3: netRxDropped, 8: netTxBytes, 9: netTxPackets, 10: netTxErrors, 11: netTxDropped} {
			v, _ := strconv.ParseFloat(fields[i], 64)
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
		}
	}
}

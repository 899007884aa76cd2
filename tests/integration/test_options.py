"""WEFT_OPTIONS: bad keys and values are reported in one line and tracing goes on with the
defaults; enable=0 records nothing; output patterns expand; writers and compression work."""
import glob
import os
import socket
from weftlib import TraceTest, main, run, WEFT, BUILD


class Options(TraceTest):
    def test_unknown_key_and_bad_value(self):
        data, p = self.record("pipeline", [1, 5, 1], options="bogus=1:writers=zero")
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 2, p.stderr)
        self.assertEqual(lines[0], "weft: unknown option 'bogus' ignored; valid keys: enable, output, name, "
                                   "categories, filter, buffer_size, chunk_size, writers, writer_cpus, "
                                   "compression, overflow, func_depth, func_min, func_filter, func_libs, memory, "
                                   "memory_stacks, memory_threshold, memory_sample, mem_access, mem_access_period, counters, "
                                   "watch, sched, sched_threads, cpu_mem, cpu_mem_exact, power, sample_period, power_period, sysfs_root, "
                                   "procfs_root, nvml_lib, gpu, cupti_lib, gpu_buffer_size, host, mpi, live, mpi_sync, control, "
                                   "flight, switch_output, switch_max_files, "
                                   "snapshot_signal, trigger, max_snapshots, min_interval, after")
        self.assertEqual(lines[1], "weft: bad value 'zero' for option writers: expected 1 to 16; using the default")
        self.assertIn("events:     ", run([WEFT, "info", data]).stdout)
        self.assertEqual(len(glob.glob(data + "/*.wevents")), 1)

    def test_disabled(self):
        data, p = self.record("pipeline", [1, 5, 1], options="enable=0")
        self.assertFalse(os.path.exists(data))
        self.assertEqual(p.stderr, "")

    def test_output_pattern_and_name(self):
        e = dict(WEFT_OPTIONS="output=out-{name}-{host}/{pid}:name=recon")
        p = run([os.path.join(BUILD, "pipeline"), "1", "3", "1"], env=e, cwd=self.tmp)
        dirs = glob.glob(os.path.join(self.tmp, f"out-recon-{socket.gethostname()}", "*"))
        self.assertEqual(len(dirs), 1, p.stderr)
        info = run([WEFT, "info", dirs[0]]).stdout
        # the program's own weft_process_name("pipeline") comes after name=, so it wins
        self.assertIn('"pipeline"', info)
        self.assertIn("options:  output=out-{name}-{host}/{pid}:name=recon", info)

    def test_writers_and_no_compression(self):
        data, _ = self.record("pipeline", [3, 100, 2], options="writers=2:compression=0:chunk_size=4K")
        self.assertEqual(len(glob.glob(data + "/*.wevents")), 2)
        info = run([WEFT, "info", data]).stdout
        raw = int(info.split("bytes raw:")[1].split()[0])
        plain = int(info.split("bytes disk:")[1].split()[0])
        self.assertLess(plain, raw)  # packed records, even without zstd
        pf, _ = self.convert(data, "w.pftrace")
        rows, = self.tp(pf, "select count(*) n from slice where name = 'unpack'")
        self.assertEqual(rows, [{"n": 300}])
        data, _ = self.record("pipeline", [3, 100, 2], options="writers=2:chunk_size=4K")
        zstd = int(run([WEFT, "info", data]).stdout.split("bytes disk:")[1].split()[0])
        self.assertLess(zstd, plain)

    def test_unwritable_output_dir(self):
        data, p = self.record("pipeline", [1, 3, 1], options="output=/proc/nope/x")
        self.assertRegex(p.stderr, r"^weft: cannot write the trace to '/proc/nope/x': .*; tracing is off\n$")

    def test_old_directory_moved_aside(self):
        data, _ = self.record("pipeline", [1, 3, 1])
        first = sorted(os.listdir(data))
        self.record("pipeline", [1, 3, 1])
        self.assertEqual(sorted(os.listdir(data + ".old")), first)


if __name__ == "__main__":
    main()

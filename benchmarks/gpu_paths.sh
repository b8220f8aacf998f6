#!/bin/bash
# The production NCCL and DDP paths on one real GPU (the device machine a session is sometimes lent; never CI):
#   bash benchmarks/gpu_paths.sh NCCL_TESTS_SRC OUT_DIR
# NCCL_TESTS_SRC: a checkout of NVIDIA/nccl-tests (the machine reaches nothing outside it: carry it there).
# It builds all_reduce_perf for sm_90 against the NCCL of the machine's torch, runs nccl_runner.py --launcher direct
# (and --launcher mpirun where Open MPI is installed), make_dataset.py with the production 1000 classes,
# ddp_runner.py --runtime host (synthetic and real data) and ddp_train.py under torchrun, then the verdict's own
# judges on what they recorded. It keeps the raw captures small under OUT_DIR (results.tgz, log.txt).
# First run, 2026-11-27 on an H100: README.md, "On a real GPU".
set -u
SRC=$(realpath "$1"); OUT=$(realpath -m "$2"); mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
W=/tmp/gpu-paths; rm -rf $W; mkdir -p $W/nccl $W/ddp $W/cap
exec > "$OUT/log.txt" 2>&1   # a plain file: no process substitution that a later `wait` would wait for
H=$(hostname)
step() { echo; echo "=== $(date +%T) $*"; }
step env
nvidia-smi topo -m > $W/cap/topo-m.txt 2>&1; nvidia-smi -q > $W/cap/nvidia-smi-q.txt 2>&1
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,uuid --format=csv,noheader > $W/cap/query-gpu.txt 2>&1
python3 -c "import torch,sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.get_device_name(0))"
INC=$(find /opt /usr -name nccl.h 2>/dev/null | head -1); LIB=$(find /opt /usr -name 'libnccl.so*' 2>/dev/null | head -1)
N=/tmp/ncclhome; mkdir -p $N/lib; ln -sfn "$(dirname "$INC")" $N/include; ln -sf "$LIB" $N/lib/libnccl.so; ln -sf "$LIB" $N/lib/libnccl.so.2
MPIH=$(dirname "$(dirname "$(find /usr -path '*openmpi*' -name mpi.h 2>/dev/null | head -1)")")
step build "(MPI_HOME=$MPIH)"
G="-gencode=arch=compute_90,code=sm_90"
(cd "$SRC/src" && timeout 240 make -j8 build MPI=0 BIN_FILES_LIST=all_reduce NCCL_HOME=$N NVCC_GENCODE="$G" BUILDDIR=$W/nt) > $W/build.log 2>&1 &
b1=$!
b2=
if [ -n "$MPIH" ] && command -v mpirun >/dev/null; then
  cp -r "$SRC" $W/src-mpi
  (cd $W/src-mpi/src && timeout 240 make -j8 build MPI=1 MPI_HOME=$MPIH BIN_FILES_LIST=all_reduce NCCL_HOME=$N NVCC_GENCODE="$G" BUILDDIR=$W/ntm) > $W/build-mpi.log 2>&1 &
  b2=$!
fi
timeout 120 python3 validation/runners/make_dataset.py --dir $W/ds --bytes $((2<<30)) --procs 8 --num-classes 1000; echo "dataset rc=$?"
wait $b1 $b2; tail -1 $W/build.log; ls -l $W/nt/all_reduce_perf $W/ntm/all_reduce_perf 2>&1
export LD_LIBRARY_PATH=$N/lib:${LD_LIBRARY_PATH:-} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step nccl
timeout 200 python3 validation/runners/nccl_runner.py --case direct --kind single --out-dir $W/nccl/direct --nodes $H \
  --gpus-per-node 1 --launcher direct --bin $W/nt/all_reduce_perf --max-bytes $((1<<30)) --repeats 2 --timeout 90; echo "rc=$?"
timeout 60 $W/nt/all_reduce_perf -b 8 -e 64M -f 2 -g 1 -c 1 -n 20 -w 5 -J $W/cap/all_reduce_perf.json > $W/cap/json-stdout.txt 2>&1
NCCL_DEBUG=INFO timeout 60 $W/nt/all_reduce_perf -b 8 -e 32M -f 2 -g 1 -c 1 > $W/cap/nccl-debug.txt 2>&1
[ -x $W/ntm/all_reduce_perf ] && timeout 120 python3 validation/runners/nccl_runner.py --case mpirun --kind single \
  --out-dir $W/nccl/mpirun --nodes $H --addrs $H --gpus-per-node 1 --launcher mpirun --bin $W/ntm/all_reduce_perf \
  --max-bytes $((256<<20)) --timeout 90; echo "mpirun rc=$?"
step ddp
timeout 200 python3 validation/runners/ddp_runner.py --case n1 --out-dir $W/ddp/n1 --nodes $H --this-node $H --runtime host \
  --gpus 1 --procs-per-node 1 --rdzv-endpoint 127.0.0.1:29500 --rdzv-id gpu --steps 40 --warmup-steps 10 \
  --modes synthetic,real --dataset $W/ds --workers 8 --python python3 --timeout 180; echo "rc=$?"
timeout 120 python3 -m torch.distributed.run --nnodes=1 --nproc-per-node=1 --rdzv-backend=c10d \
  --rdzv-endpoint=127.0.0.1:29501 --rdzv-id=tr --rdzv-conf=is_host=1 validation/runners/ddp_train.py --steps 30 \
  --warmup-steps 10 --modes synthetic --workers 8 --out-dir $W/ddp/torchrun --device cuda > $W/ddp/torchrun.log 2>&1
echo "torchrun rc=$?"
step judge
python3 - "$W" "$H" <<'EOF'
import json, sys
from pathlib import Path
from validation import parse_nccl, parse_sysinfo
from validation.stages.ddp import judge_ddp_case
from validation.stages.nccl import judge_nccl_case
W, H = Path(sys.argv[1]), sys.argv[2]
print("topo", parse_sysinfo.parse_topo((W / "cap" / "topo-m.txt").read_text()))
for case, reps in (("direct", 2), ("mpirun", 1)):
    if (W / "nccl" / case).is_dir():
        c, v, _ = judge_nccl_case(W / "nccl" / case, case, [H], 1, False, 1 << 20, reps, None)
        print("nccl", case, c.status, v, *c.reasons, sep="\n  ")
for f in ("all_reduce_perf.json", "json-stdout.txt", "nccl-debug.txt"):
    for r in parse_nccl.parse((W / "cap" / f).read_text()):
        print(f, r.collective, r.ranks, r.nodes or r.info_hosts, "complete", r.complete, "errors", r.errors)
c, per = judge_ddp_case(W / "ddp" / "n1", "n1", 1, False, 1)
print("ddp n1", c.status, per, *c.reasons, sep="\n  ")
for f in sorted((W / "ddp").glob("*/*-r1.json")):
    d = json.loads(f.read_text())
    print(f, {k: d.get(k) for k in ("backend", "device", "complete", "world_size", "samples_per_s", "errors")})
EOF
tar czf "$OUT/results.tgz" -C $W --exclude ./nt --exclude ./ntm --exclude ./ds --exclude ./src-mpi .

# Job backends (Kaldi/ESPnet convention). Choose with cmd_backend=local|slurm,
# e.g. `cmd_backend=slurm ./run.sh`. Usage inside stages:
#   ${train_cmd} --mem 4G JOB=1:${nj} exp/x/log/foo.JOB.log command args...
# Slurm options are mapped through conf/slurm.conf (recipe's own if present,
# else the shared ${CHORUS_ROOT}/conf/slurm.conf), in ESPnet's format.
cmd_backend=${cmd_backend:-local}

case "${cmd_backend}" in
  local)
    export train_cmd="utils/run.pl"
    export cuda_cmd="utils/run.pl"
    export decode_cmd="utils/run.pl"
    ;;
  slurm)
    _slurm_conf=conf/slurm.conf
    [ -f "${_slurm_conf}" ] || _slurm_conf="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/conf/slurm.conf"
    export train_cmd="utils/slurm.pl --config ${_slurm_conf}"
    export cuda_cmd="utils/slurm.pl --config ${_slurm_conf}"
    export decode_cmd="utils/slurm.pl --config ${_slurm_conf}"
    ;;
  *)
    echo "cmd.sh: unknown cmd_backend=${cmd_backend} (use local or slurm)" >&2
    return 1 2>/dev/null || exit 1
    ;;
esac

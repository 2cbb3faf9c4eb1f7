# Environment of a Chorus recipe: sourced by run.sh and by every job.
# Recipes link this file (egs/<recipe>/path.sh -> ../TEMPLATE/path.sh).
# The link is resolved, so a recipe forked anywhere (utils/fork_recipe.sh) finds this checkout.
CHORUS_ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
export CHORUS_ROOT
if [ ! -x "${CHORUS_ROOT}/tools/venv/bin/python" ]; then
  echo "path.sh: ${CHORUS_ROOT}/tools/venv is missing: run 'make -C ${CHORUS_ROOT}/tools' first" >&2
  return 1 2>/dev/null || exit 1
fi
export PATH="${CHORUS_ROOT}/tools/venv/bin:${CHORUS_ROOT}/utils:${PATH}"
# This checkout's own pyutils first (a fork or a git worktree sharing one venv).
export PYTHONPATH="${CHORUS_ROOT}${PYTHONPATH:+:${PYTHONPATH}}"
export LC_ALL=C
export PYTHONUNBUFFERED=1
export PYTHONIOENCODING=UTF-8
# One BLAS thread per job: parallelism comes from $nj jobs (Kaldi convention).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
# Never reach a model hub at run time.
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1

# bench/twins.sh -- sourced (not run; ROOT set) by the scripts that run a BSPk program
# and its Open MPI twin side by side (bench/collectives.sh,
# bench/imbalance.sh): building them, and launching each the same way.
#
#   twins_build TOOL BUILD BINDIR BSPK_TARGET MPI_TARGET
#       builds bspkrun and both targets (the MPI one may fail: no MPI), sets
#       BIN=BINDIR, HAVE_MPI (1 when mpirun and the twin exist), NCORES
#   twins_run_bspk PROV P PROGRAM ARGS...   bspkrun -n P, as across hosts on tcp
#   twins_run_mpi  PROV P PROGRAM ARGS...   mpirun -n P on the matching BTL
#
# shm: libfabric shm against the vader BTL; tcp: libfabric tcp with rings off
# and counts by messages (what auto picks across hosts; see bench/suite.sh)
# against the TCP BTL. Above the core count both run oversubscribed (Open MPI
# unbound, BSPk with its default --bind auto: round-robin), else bound to cores.

twins_build() {
  _tool=$1 BUILD=$2 BIN=$3
  [ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" -j2 --target bspkrun "$4" >/dev/null
  cmake --build "$BUILD" -j2 --target "$5" >/dev/null 2>&1 || true
  HAVE_MPI=0
  if command -v mpirun >/dev/null && [ -x "$BIN/$5" ]; then HAVE_MPI=1; else
    echo "$_tool: no mpirun or no MPI twin (install-deps.sh installs Open MPI): BSPk only" >&2; fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  NCORES=$(nproc)
}

twins_run_bspk() {
  _prov=$1 _p=$2
  shift 2
  if [ "$_p" -le "$NCORES" ]; then _bind=core; else _bind=auto; fi  # auto: round-robin, BSPk's default
  _exch=auto _rings=auto
  if [ "$_prov" = tcp ]; then _rings=off; _exch=messages; fi
  BSPK_COUNT_EXCHANGE=$_exch BSPK_SHM_RINGS=$_rings timeout --foreground 900 "$BUILD/bspkrun" -n "$_p" --provider "$_prov" \
    --bind $_bind "$@"
}

twins_run_mpi() {
  _prov=$1 _p=$2
  shift 2
  if [ "$_p" -le "$NCORES" ]; then _bind="--bind-to core"; else _bind="--bind-to none --oversubscribe"; fi
  case $_prov in
    shm) _mca="--mca pml ob1 --mca btl self,vader" ;;
    *) _mca="--mca pml ob1 --mca btl self,tcp" ;;
  esac
  # shellcheck disable=SC2086
  timeout --foreground 900 mpirun -n "$_p" $_bind $_mca "$@"
}

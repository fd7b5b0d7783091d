# Open MPI settings for running as root on a small shared machine (source this file).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Oversubscribed ranks must not busy-poll (shared/MACHINE-FACTS.md: 5 ms instead of 23 us otherwise).
export OMPI_MCA_mpi_yield_when_idle=1
# No network interfaces besides loopback are needed for single-host runs.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo

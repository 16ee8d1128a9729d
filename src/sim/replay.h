/*
 * replay.h — `gpupool-sim replay` and `gpupool-sim plan`: a trace in virtual
 * time (arrivals and durations) through the full engine cycle, in the modes
 * an administrator compares (static shares, one pool of whole GPUs, one pool
 * with fractional requests honoured), and the capacity-planning report.
 */
#ifndef GP_SIM_REPLAY_H
#define GP_SIM_REPLAY_H

/* The command entry points: argv[0] is the command name. Return the exit
 * status. */
int sim_cmd_replay(int argc, char **argv);
int sim_cmd_plan(int argc, char **argv);

#endif /* GP_SIM_REPLAY_H */

/*
 * gp_queue.h — the bounds of a queue's settings that the daemon enforces
 * (daemon/request.c) and gpupool queue checks before it sends them, so that
 * the two cannot disagree.
 */
#ifndef GP_QUEUE_H
#define GP_QUEUE_H

/* A queue's priority among its siblings is -max..max. */
#define GP_QUEUE_PRIORITY_MAX 1000
/* A queue's weight, one for every resource or one each, is 0..max. */
#define GP_QUEUE_WEIGHT_MAX 1000000

#endif /* GP_QUEUE_H */

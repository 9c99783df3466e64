"""Running a stage's processes on one machine or a Slurm cluster, and surviving the cluster.

- :mod:`~vlrl.cluster.distributed`: how a training stage launches its ranks (in process, under
  torchrun, one torchrun per node of a Slurm job) and their rendezvous;
- :mod:`~vlrl.cluster.launch`: child process groups that never outlive the stage;
- :mod:`~vlrl.cluster.llamafactory_train`: ``llamafactory-cli train`` with vlrl's callbacks;
- :mod:`~vlrl.cluster.preemption`: a job's time limit, stop signals and requeue;
- :mod:`~vlrl.cluster.timelimit`: stopping training with a checkpoint before the limit, or at
  a planned step of a longer schedule;
- :mod:`~vlrl.cluster.checkpoints`: which checkpoint of a run can be resumed;
- :mod:`~vlrl.cluster.threads`: CPU threads and kernels of a stage process (the bits depend on
  both).

May import: :mod:`vlrl.core`, :mod:`vlrl.config`.
"""

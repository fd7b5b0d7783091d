// MLPerf logging keys (mlcommons/logging, mllog/constants.py): the one place they are spelled.
#pragma once

namespace dtbench::mllog {
inline constexpr const char* kInitStart = "init_start";
inline constexpr const char* kInitStop = "init_stop";
inline constexpr const char* kRunStart = "run_start";
inline constexpr const char* kRunStop = "run_stop";
inline constexpr const char* kEpochStart = "epoch_start";
inline constexpr const char* kEpochStop = "epoch_stop";
inline constexpr const char* kEvalStart = "eval_start";
inline constexpr const char* kEvalStop = "eval_stop";
inline constexpr const char* kEvalAccuracy = "eval_accuracy";
inline constexpr const char* kGlobalBatchSize = "global_batch_size";
inline constexpr const char* kOptName = "opt_name";
inline constexpr const char* kOptBaseLearningRate = "opt_base_learning_rate";
inline constexpr const char* kOptWarmupEpochs = "opt_learning_rate_warmup_epochs";
inline constexpr const char* kSeed = "seed";
inline constexpr const char* kTrainSamples = "train_samples";
inline constexpr const char* kEvalSamples = "eval_samples";
inline constexpr const char* kSubmissionBenchmark = "submission_benchmark";
inline constexpr const char* kSubmissionOrg = "submission_org";
inline constexpr const char* kSubmissionPlatform = "submission_platform";
inline constexpr const char* kSubmissionDivision = "submission_division";
inline constexpr const char* kSubmissionStatus = "submission_status";
inline constexpr const char* kCacheClear = "cache_clear";
// dtbench's own: a resumed run continues its log with this instead of a second init and run_start.
inline constexpr const char* kResume = "dtbench_resume";
inline constexpr const char* kModelArch = "dtbench_model_arch";  // the network (submission_benchmark names the task)
inline constexpr const char* kDataset = "dtbench_dataset";        // keys the quality target of our own rules file
inline constexpr const char* kTargetAccuracy = "dtbench_target_accuracy";  // the run's eval.target_accuracy
inline constexpr const char* kEpochNum = "epoch_num";  // metadata of epoch and eval events
inline constexpr const char* kStatus = "status";       // metadata of run_stop
inline constexpr const char* kStatusSuccess = "success";
inline constexpr const char* kStatusAborted = "aborted";
inline constexpr const char* kIntervalStart = "INTERVAL_START";
inline constexpr const char* kIntervalEnd = "INTERVAL_END";
inline constexpr const char* kPointInTime = "POINT_IN_TIME";
}  // namespace dtbench::mllog

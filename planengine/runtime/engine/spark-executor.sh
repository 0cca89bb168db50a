#!/usr/bin/env bash
# Spark executor of a planengine driver on Kubernetes (installed as /usr/local/bin/planengine-spark-executor).
#
# Spark starts executor pods from the driver's pod template with the args "executor" and its settings in
# SPARK_* variables, expecting Spark's own image entrypoint. The planengine image's entrypoint is the
# planengine CLI, so the executor pod template (operator/planengine_operator/builders.py) runs this instead:
# what Spark's kubernetes/dockerfiles/spark/entrypoint.sh does for "executor", on the jars of the pyspark
# installed in the image (the driver's own Spark, so both sides agree on every class).
set -euo pipefail

spark_home="$(python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"

# SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ...: the executor JVM options Spark chose, in their order.
java_opts=()
while IFS='=' read -r name _; do
  java_opts+=("${!name}")
done < <(env | grep -o '^SPARK_JAVA_OPT_[0-9]*=' | sort -t_ -k4 -n)

exec java "${java_opts[@]}" \
  -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
  -cp "${spark_home}/jars/*${SPARK_EXTRA_CLASSPATH:+:$SPARK_EXTRA_CLASSPATH}" \
  org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
  --driver-url "${SPARK_DRIVER_URL}" \
  --executor-id "${SPARK_EXECUTOR_ID}" \
  --cores "${SPARK_EXECUTOR_CORES}" \
  --app-id "${SPARK_APPLICATION_ID}" \
  --hostname "${SPARK_EXECUTOR_POD_IP}" \
  --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
  --podName "${SPARK_EXECUTOR_POD_NAME}"

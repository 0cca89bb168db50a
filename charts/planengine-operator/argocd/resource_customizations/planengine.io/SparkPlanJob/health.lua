-- Argo CD health check for planengine.io/SparkPlanJob.
-- Install it as resource.customizations.health.planengine.io_SparkPlanJob in argocd-cm (docs/operator.md,
-- "Argo CD"). Argo CD runs gopher-lua, i.e. Lua 5.1: no goto, no integer division, no string methods beyond 5.1.
--
--   no status yet, or observedGeneration behind metadata.generation        -> Progressing
--   Degraded condition True with reason MissingConfigMap                    -> Progressing (a ConfigMap the job
--                                                                              reads does not exist yet: it starts
--                                                                              once it does; never Missing, which
--                                                                              Argo CD keeps for absent resources)
--   phase Failed, RollingBack or RolledBack                                 -> Degraded
--   phase Suspended                                                         -> Suspended
--   Degraded condition True (refused change or upgrade, failing driver)    -> Degraded
--   phase Running with Ready True, nothing in progress but a snapshot       -> Healthy
--   anything else (Pending, Compiling, Starting, Upgrading, ...)            -> Progressing
local hs = {}

local function condition(status, wanted)
  if status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == wanted then
      return c
    end
  end
  return nil
end

local function is_true(c)
  return c ~= nil and c.status == "True"
end

local function first_text(...)
  for i = 1, select("#", ...) do
    local text = select(i, ...)
    if text ~= nil and text ~= "" then
      return text
    end
  end
  return ""
end

local function verdict(state, message)
  hs.status = state
  hs.message = message
  return hs
end

local status = obj.status
if status == nil or status.phase == nil then
  return verdict("Progressing", "Waiting for the planengine operator to pick up the job")
end

local generation = obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  local observed = "none"
  if status.observedGeneration ~= nil then
    observed = tostring(status.observedGeneration)
  end
  return verdict("Progressing", "The operator has not acted on generation " .. tostring(generation) ..
    " yet (observed: " .. observed .. ")")
end

local phase = status.phase
local degraded = condition(status, "Degraded")
local upgrade = status.upgrade or {}

if is_true(degraded) and degraded.reason == "MissingConfigMap" then
  -- The job exists and waits: Progressing, as for any other wait (Argo CD's Missing means "not in the cluster",
  -- and an application whose resource is Missing looks out of sync rather than on its way).
  return verdict("Progressing", first_text(degraded.message, status.error, "Waiting for a ConfigMap"))
end
if phase == "Failed" then
  return verdict("Degraded", first_text(status.error, degraded and degraded.message, "The job failed"))
end
if phase == "RollingBack" then
  return verdict("Degraded", "Upgrade to engine " .. first_text(upgrade.to, "?") .. " failed, rolling back to " ..
    first_text(upgrade.from, "?") .. ": " .. first_text(upgrade.message, status.error))
end
if phase == "RolledBack" then
  return verdict("Degraded", "Upgrade to engine " .. first_text(upgrade.to, "?") .. " rolled back to " ..
    first_text(status.engineVersion, upgrade.from, "?") .. ": " .. first_text(upgrade.message, status.error))
end
if phase == "Suspended" then
  local snapshot = ""
  if status.lastSnapshot ~= nil and status.lastSnapshot.id ~= nil then
    snapshot = " with snapshot " .. status.lastSnapshot.id
  end
  return verdict("Suspended", "Suspended" .. snapshot .. "; set spec.state: running to resume")
end
if is_true(degraded) then
  return verdict("Degraded", first_text(degraded.reason, "Degraded") .. ": " ..
    first_text(degraded.message, status.error))
end

local operation = status.operation
local progressing = condition(status, "Progressing")
-- A snapshot (manual or periodic) does not interrupt the run: still Healthy.
local busy = operation ~= nil and operation.type ~= nil and operation.type ~= "Snapshot"
if phase == "Running" and is_true(condition(status, "Ready")) and not busy then
  if is_true(progressing) and progressing.reason == "RolloutWaiting" then
    return verdict("Progressing", first_text(progressing.message, "Waiting for the fleet rollout"))
  end
  return verdict("Healthy", "Running on engine " .. first_text(status.engineVersion, "?"))
end

local message = phase
if operation ~= nil and operation.step ~= nil then
  message = message .. " (" .. first_text(operation.type, "?") .. " step " .. operation.step .. ")"
  if operation.message ~= nil and operation.message ~= "" then
    message = message .. ": " .. operation.message
  end
end
return verdict("Progressing", message)

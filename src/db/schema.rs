// Written to match migrations/sqlite; keep the two in step (a test runs every query against a
// freshly migrated database, so a mismatch fails there).

diesel::table! {
    projects (id) {
        id -> Text,
        name -> Text,
        folder_path -> Text,
        description -> Nullable<Text>,
        project_type -> Text,
        source -> Text,
        default_model -> Nullable<Text>,
        default_permission_mode -> Nullable<Text>,
        default_system_prompt -> Nullable<Text>,
        default_append_system_prompt -> Nullable<Text>,
        max_sessions -> Integer,
        created_at -> Text,
        updated_at -> Text,
        sandbox -> Nullable<Text>,
        workspace_mode -> Text,
        workspace_copy -> Text,
        setup_script -> Nullable<Text>,
        default_agent -> Nullable<Text>,
        budget_daily_usd -> Nullable<Double>,
        budget_monthly_usd -> Nullable<Double>,
        max_running_turns -> Nullable<Integer>,
        nodes -> Text,
        env -> Text,
        turn_inactivity_timeout_ms -> Nullable<BigInt>,
        session_limits -> Nullable<Text>,
    }
}

diesel::table! {
    permission_rules (id) {
        id -> Text,
        project_id -> Nullable<Text>,
        tool_name -> Text,
        rule_content -> Text,
        behavior -> Text,
        priority -> Integer,
        updated_input -> Nullable<Text>,
        created_at -> Text,
        updated_at -> Text,
    }
}

diesel::table! {
    sessions (id) {
        id -> Text,
        project_id -> Text,
        session_id -> Nullable<Text>,
        external_key -> Nullable<Text>,
        name -> Text,
        status -> Text,
        model -> Nullable<Text>,
        permission_mode -> Nullable<Text>,
        system_prompt -> Nullable<Text>,
        append_system_prompt -> Nullable<Text>,
        resume_session_id -> Nullable<Text>,
        fork_session -> Bool,
        transport -> Text,
        ws_port -> Nullable<Integer>,
        cli_pid -> Nullable<Integer>,
        cli_started_at -> Nullable<Text>,
        total_cost_usd -> Double,
        total_input_tokens -> BigInt,
        total_output_tokens -> BigInt,
        num_turns -> Integer,
        error_message -> Nullable<Text>,
        created_at -> Text,
        last_active_at -> Text,
        closed_at -> Nullable<Text>,
        closed_reason -> Nullable<Text>,
        workspace_mode -> Text,
        worktree_path -> Nullable<Text>,
        branch -> Nullable<Text>,
        base_ref -> Nullable<Text>,
        base_commit -> Nullable<Text>,
        agent -> Text,
        resumes_at -> Nullable<Text>,
        status_reason -> Nullable<Text>,
        max_budget_usd -> Nullable<Double>,
        parked_from_seq -> Nullable<BigInt>,
        owner_node -> Nullable<Text>,
        keeper_state -> Nullable<Text>,
        limits -> Nullable<Text>,
    }
}

diesel::table! {
    messages (id) {
        id -> BigInt,
        session_id -> Text,
        direction -> Text,
        message_type -> Text,
        message_subtype -> Nullable<Text>,
        content -> Text,
        timestamp -> Text,
        seq -> Nullable<BigInt>,
        delivered_at -> Nullable<Text>,
        cli_seq -> Nullable<BigInt>,
    }
}

diesel::table! {
    session_events (id) {
        id -> BigInt,
        session_id -> Text,
        seq -> BigInt,
        kind -> Text,
        name -> Text,
        data -> Text,
        timestamp -> Text,
    }
}

diesel::table! {
    permission_log (id) {
        id -> BigInt,
        project_id -> Nullable<Text>,
        session_id -> Nullable<Text>,
        request_id -> Text,
        tool_use_id -> Nullable<Text>,
        decision_point -> Text,
        tool_name -> Text,
        tool_input -> Text,
        decision -> Text,
        decision_source -> Text,
        rule_id -> Nullable<Text>,
        reason -> Nullable<Text>,
        decided_at -> Text,
        command_reading -> Nullable<Text>,
        agent -> Nullable<Text>,
    }
}

diesel::table! {
    webhooks (id) {
        id -> Text,
        name -> Text,
        url -> Text,
        events -> Text,
        secret -> Nullable<Text>,
        active -> Bool,
        created_at -> Text,
        updated_at -> Text,
    }
}

diesel::joinable!(permission_rules -> projects (project_id));
diesel::joinable!(sessions -> projects (project_id));
diesel::joinable!(messages -> sessions (session_id));
diesel::joinable!(session_events -> sessions (session_id));

diesel::allow_tables_to_appear_in_same_query!(
    projects,
    permission_rules,
    sessions,
    messages,
    session_events,
    permission_log,
    webhooks
);

diesel::table! {
    webhook_deliveries (id) {
        id -> BigInt,
        delivery_id -> Text,
        webhook_id -> Text,
        event_type -> Text,
        attempt -> Integer,
        status_code -> Nullable<Integer>,
        duration_ms -> BigInt,
        error -> Nullable<Text>,
        succeeded -> Bool,
        attempted_at -> Text,
    }
}

diesel::joinable!(webhook_deliveries -> webhooks (webhook_id));
diesel::allow_tables_to_appear_in_same_query!(webhooks, webhook_deliveries);

diesel::table! {
    agents (id) {
        id -> Text,
        project_id -> Nullable<Text>,
        name -> Text,
        objective -> Text,
        schedule -> Text,
        cwd -> Text,
        model -> Nullable<Text>,
        timeout_ms -> BigInt,
        status -> Text,
        consecutive_failures -> Integer,
        next_run_at -> Nullable<Text>,
        created_at -> Text,
        updated_at -> Text,
        workspace_mode -> Text,
        agent -> Text,
        max_budget_usd -> Nullable<Double>,
    }
}

diesel::table! {
    agent_executions (id) {
        id -> Text,
        agent_id -> Text,
        trigger_kind -> Text,
        status -> Text,
        exit_code -> Nullable<Integer>,
        started_at -> Nullable<Text>,
        finished_at -> Nullable<Text>,
        cost_usd -> Nullable<Double>,
        input_tokens -> Nullable<BigInt>,
        output_tokens -> Nullable<BigInt>,
        output -> Text,
        raw_output -> Text,
        error -> Nullable<Text>,
        created_at -> Text,
        resumes_at -> Nullable<Text>,
        owner_node -> Nullable<Text>,
        fire_at -> Nullable<Text>,
    }
}

diesel::table! {
    processes (id) {
        id -> Text,
        project_id -> Text,
        session_id -> Nullable<Text>,
        kind -> Text,
        command -> Text,
        cwd -> Text,
        context -> Nullable<Text>,
        status -> Text,
        pid -> Nullable<Integer>,
        exit_code -> Nullable<Integer>,
        signal -> Nullable<Integer>,
        end_reason -> Nullable<Text>,
        started_at -> Text,
        ended_at -> Nullable<Text>,
        stdout_bytes -> BigInt,
        stderr_bytes -> BigInt,
        stdout_truncated -> Bool,
        stderr_truncated -> Bool,
        owner_node -> Nullable<Text>,
    }
}

diesel::joinable!(agent_executions -> agents (agent_id));
diesel::allow_tables_to_appear_in_same_query!(agents, agent_executions, projects);

diesel::table! {
    usage_ledger (id) {
        id -> BigInt,
        recorded_at -> Text,
        project_id -> Nullable<Text>,
        session_id -> Nullable<Text>,
        execution_id -> Nullable<Text>,
        agent_id -> Nullable<Text>,
        agent -> Text,
        model -> Nullable<Text>,
        cost_usd -> Double,
        input_tokens -> BigInt,
        output_tokens -> BigInt,
    }
}

diesel::table! {
    usage_hourly (hour, project_id, session_id, agent_id, agent, model) {
        hour -> Text,
        project_id -> Text,
        session_id -> Text,
        agent_id -> Text,
        agent -> Text,
        model -> Text,
        cost_usd -> Double,
        input_tokens -> BigInt,
        output_tokens -> BigInt,
        turns -> BigInt,
    }
}

diesel::table! {
    usage_daily (day, project_id, agent_id, agent, model) {
        day -> Text,
        project_id -> Text,
        agent_id -> Text,
        agent -> Text,
        model -> Text,
        cost_usd -> Double,
        input_tokens -> BigInt,
        output_tokens -> BigInt,
        turns -> BigInt,
    }
}

diesel::table! {
    nodes (name) {
        name -> Text,
        address -> Text,
        capacity -> Integer,
        state -> Text,
        role -> Text,
        live_sessions -> Integer,
        started_at -> Text,
        heartbeat_at -> Text,
        lease_until -> Text,
    }
}

diesel::allow_tables_to_appear_in_same_query!(nodes, sessions);

diesel::table! {
    users (id) {
        id -> Text,
        name -> Text,
        password_hash -> Text,
        created_at -> Text,
    }
}

diesel::table! {
    api_tokens (id) {
        id -> Text,
        name -> Text,
        scope -> Text,
        project_id -> Nullable<Text>,
        created_by -> Nullable<Text>,
        token_hash -> Text,
        created_at -> Text,
        expires_at -> Nullable<Text>,
        revoked_at -> Nullable<Text>,
        last_used_at -> Nullable<Text>,
    }
}

diesel::joinable!(api_tokens -> projects (project_id));
diesel::allow_tables_to_appear_in_same_query!(api_tokens, projects, users);

diesel::table! {
    audit_log (id) {
        id -> BigInt,
        at -> Text,
        event -> Text,
        actor -> Text,
        actor_id -> Nullable<Text>,
        method -> Text,
        route -> Text,
        target -> Nullable<Text>,
        status -> Integer,
        address -> Nullable<Text>,
    }
}

diesel::table! {
    login_sessions (id) {
        id -> Text,
        user_id -> Text,
        secret_hash -> Text,
        created_at -> Text,
        last_seen_at -> Text,
        expires_at -> Text,
        revoked_at -> Nullable<Text>,
        address -> Nullable<Text>,
        user_agent -> Nullable<Text>,
    }
}

diesel::joinable!(login_sessions -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(login_sessions, users);

diesel::table! {
    login_failures (id) {
        id -> Text,
        address -> Text,
        at -> Text,
        pending -> Bool,
    }
}

diesel::table! {
    login_lockouts (address) {
        address -> Text,
        until -> Text,
    }
}

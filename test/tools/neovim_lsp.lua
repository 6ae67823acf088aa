-- Headless Neovim, its built-in LSP client, and spmd-clangd: open a file with
-- SPMD errors, wait for the diagnostics, apply every quick fix the server
-- offers, and wait for the SPMD diagnostics to clear. Driven by
-- neovim_lsp_test.py, which passes its settings in the environment and reads
-- the JSON this script writes to $SPMD_OUT.
local env = vim.env
local timeout = tonumber(env.SPMD_TIMEOUT_MS)
local result = { steps = {} }

local function step(name, value)
  table.insert(result.steps, { name = name, value = value })
end

local function finish(status)
  result.status = status
  local f = assert(io.open(env.SPMD_OUT, "w"))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(env.SPMD_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  local started = vim.loop.hrtime()
  local client_id = vim.lsp.start_client({
    name = "spmd-clangd",
    cmd = { env.SPMD_PROXY, "--clangd=" .. env.SPMD_CLANGD,
            "--background-index=false" },
    root_dir = env.SPMD_ROOT,
  })
  assert(client_id, "the LSP client did not start")
  vim.lsp.buf_attach_client(bufnr, client_id)

  local function by_source()
    local spmd, own = {}, {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.source == "spmd-check" then
        table.insert(spmd, d)
      else
        table.insert(own, d)
      end
    end
    return spmd, own
  end
  local function seconds()
    return (vim.loop.hrtime() - started) / 1e9
  end

  -- First answers: clangd's own diagnostic and the SPMD ones (times are
  -- reported, never asserted).
  local first_own, first_spmd
  local got = vim.wait(timeout, function()
    local spmd, own = by_source()
    if #own > 0 and not first_own then first_own = seconds() end
    if #spmd > 0 and not first_spmd then first_spmd = seconds() end
    return #spmd >= 2
  end, 50)
  result.first_own_s = first_own
  result.first_spmd_s = first_spmd
  if not got then return finish("no SPMD diagnostics") end
  local spmd = by_source()
  local codes = {}
  for _, d in ipairs(spmd) do
    table.insert(codes, { code = d.code, line = d.lnum, message = d.message })
  end
  step("diagnostics", codes)

  -- Apply one quick fix at a time, the way a user would, until none is
  -- offered or the SPMD diagnostics are gone.
  local client = vim.lsp.get_client_by_id(client_id)
  local applied = {}
  for _ = 1, 4 do
    spmd = by_source()
    if #spmd == 0 then break end
    local d = spmd[1]
    -- The context the way Neovim's own code_action() builds it: the LSP
    -- form of the line's diagnostics.
    local params = {
      textDocument = vim.lsp.util.make_text_document_params(bufnr),
      range = {
        start = { line = d.lnum, character = d.col },
        ["end"] = { line = d.end_lnum, character = d.end_col },
      },
      context = { diagnostics =
        vim.lsp.diagnostic.get_line_diagnostics(bufnr, d.lnum) },
    }
    local answers = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction",
                                             params, timeout)
    local action
    for _, answer in pairs(answers or {}) do
      for _, a in ipairs(answer.result or {}) do
        if a.kind == "quickfix" and a.edit and not action then action = a end
      end
    end
    if not action then
      step("no quick fix for", { code = d.code, answers = answers })
      break
    end
    table.insert(applied, { code = d.code, title = action.title, edit = action.edit })
    local before = vim.b[bufnr].changedtick
    vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
    assert(vim.b[bufnr].changedtick ~= before, "the edit changed nothing")
    -- Wait for a publish of the edited text that no longer has this error.
    local count = #spmd
    vim.wait(timeout, function()
      local now = by_source()
      return #now < count
    end, 50)
  end
  step("applied", applied)
  spmd = by_source()
  result.remaining = #spmd
  result.text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
  vim.lsp.stop_client(client_id)
  finish("done")
end)
if not ok then
  result.error = tostring(err)
  finish("error")
end

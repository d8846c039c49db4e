// Compiled (never run) by types.test.js: the generated declarations type a client's calls.
import {
  Client,
  type JobResult,
  type SolveInput,
  SpendCapExceeded,
  type ToolResult,
  type VehicleRecallsOutput,
  verifyReceipt,
} from "tollway-client";

export async function usage(): Promise<number> {
  const tollway = new Client({ baseUrl: "http://127.0.0.1:8402", walletKey: "0x…", maxPaymentUsdc: "0.10" });
  const recalls: ToolResult<VehicleRecallsOutput> = await tollway.vehicleRecalls({
    make: "Honda",
    model: "Accord",
    model_year: 2021,
  });
  const total: number = recalls.data.result.total;
  const tool: "vehicle_recalls" = recalls.data.tool;

  // @ts-expect-error model_year is required
  await tollway.vehicleRecalls({ make: "Honda", model: "Accord" });
  // @ts-expect-error a number is not a make
  await tollway.vehicleRecalls({ make: 1, model: "Accord", model_year: 2021 });

  const problem: SolveInput = { problem: "packing", time_limit_s: 5 };
  const done = (await tollway.solve(problem, { idempotencyKey: "k" })) as JobResult;
  const channel: "websocket" | "polling" = done.channel;

  const keys = await tollway.receiptKeys();
  const ok: boolean = verifyReceipt(await tollway.receipt(recalls.receiptId), keys);
  try {
    await tollway.call("vehicle_recalls", { make: "Honda" });
  } catch (err) {
    if (err instanceof SpendCapExceeded) return err.code.length;
  }
  return total + tool.length + channel.length + Number(ok);
}
